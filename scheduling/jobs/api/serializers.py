"""The jobs API's bodies and answers: PUT, POST and PATCH refuse fields they do not know; a
job answers with its pending runs and its latest others."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from scheduling.jobs.api.fields import (
    CallbackField,
    KeyField,
    LabelsField,
    PayloadField,
    SchedulesField,
)
from scheduling.jobs.api.filters import FILTER_HELP
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.ops.api.serializers import (
    BoundedJSONField,
    BulkCancelSerializer,
    BulkRescheduleSerializer,
    ScheduledEventSerializer,
    StrictDateTimeField,
)
from scheduling.rows.states import Status
from scheduling.time.times import iso_utc

# A job's answer lists its pending runs and this many of its latest other runs.
RUN_HISTORY = 50
# A job in the list shows this many of its next pending instants and its runs counted by
# status, so a page costs the same whatever its jobs hold; the job's own URL has all of them.
LIST_SCHEDULES = 10
# Jobs a list page holds at most (`?limit=` above it is capped): each carries its payload.
MAX_LIST_LIMIT = 100
RUN_COUNTS_SCHEMA = {
    "type": "object",
    "properties": {status: {"type": "integer"} for status in Status.values},
    "required": list(Status.values),
    "example": {status: 0 for status in Status.values} | {"pending": 6, "delivered": 2},
}


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know: a misspelt field must not be dropped silently."""

    refused: ClassVar[dict[str, str]] = {}

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            accepted = ", ".join(self.fields)
            unknown = sorted(set(data) - set(self.fields))
            errors = {
                name: [self.refused.get(name, f"Unknown field; accepted: {accepted}.")]
                for name in unknown
            }
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


class JobPutSerializer(StrictSerializer):
    schedules = SchedulesField(
        help_text="The instants of the pending runs, ISO 8601 with an offset or Z; may be empty."
    )
    callback = CallbackField()
    payload = PayloadField(
        required=False,
        help_text="A JSON object; empty if not given. A rabbitmq callback may give it as "
        "`callback.data.payload` instead.",
    )
    labels = LabelsField(required=False, help_text="A JSON object of strings; empty if not given.")


class JobPostSerializer(JobPutSerializer):
    """PUT's body with the key in it: MyCoach's scheduler request, as its clients send it."""

    key = KeyField()

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        return {"key": fields.pop("key"), **fields}


class JobPatchSerializer(StrictSerializer):
    refused: ClassVar[dict[str, str]] = {
        "schedules": "PATCH changes callback, payload or labels; PUT the job to replace its "
        "schedules."
    }
    callback = CallbackField(required=False)
    payload = PayloadField(required=False, help_text="Replaces the payload.")
    labels = LabelsField(required=False, help_text="Replaces the labels.")


class JobRunSerializer(ScheduledEventSerializer):
    message_id = serializers.CharField(
        read_only=True, help_text="The id the callback's consumer receives."
    )

    class Meta(ScheduledEventSerializer.Meta):
        model = ScheduledJobRun
        fields = (*ScheduledEventSerializer.Meta.fields, "message_id")
        read_only_fields = fields


class JobSerializer(serializers.ModelSerializer):
    callback = CallbackField(read_only=True)
    payload = PayloadField(read_only=True)
    labels = LabelsField(read_only=True)
    schedules = serializers.SerializerMethodField(help_text="The instants of the pending runs.")
    runs = serializers.SerializerMethodField(
        help_text=f"The pending runs and the {RUN_HISTORY} latest others (delivered, cancelled, "
        "expired, failed), by due time."
    )
    created_at = StrictDateTimeField(read_only=True)
    updated_at = StrictDateTimeField(read_only=True)

    class Meta:
        model = Job
        fields: tuple[str, ...] = ("key", "callback", "payload", "labels", "schedules", "runs")
        fields = (*fields, "created_at", "updated_at")

    @extend_schema_field({"type": "array", "items": {"type": "string", "format": "date-time"}})
    def get_schedules(self, job: Job) -> list[str]:
        return [iso_utc(run.due_at) for run in job.pending_runs]  # type: ignore[attr-defined]

    @extend_schema_field(JobRunSerializer(many=True))
    def get_runs(self, job: Job) -> Any:
        runs = [*job.pending_runs, *job.recent_runs]  # type: ignore[attr-defined]
        runs.sort(key=lambda run: (run.due_at, run.pk))
        return JobRunSerializer(runs, many=True, context=self.context).data


class JobListSerializer(JobSerializer):
    """A job in the list: its next pending instants and its runs counted, not every run."""

    schedules = serializers.SerializerMethodField(
        help_text=f"The next {LIST_SCHEDULES} instants of the pending runs (all of them at the "
        "job's own URL)."
    )
    run_counts = serializers.SerializerMethodField(
        help_text="The job's runs by status, every status named (0 when none)."
    )

    class Meta(JobSerializer.Meta):
        fields: tuple[str, ...] = ("key", "callback", "payload", "labels", "schedules")
        fields = (*fields, "run_counts", "created_at", "updated_at")

    @extend_schema_field(
        {
            "type": "array",
            "maxItems": LIST_SCHEDULES,
            "items": {"type": "string", "format": "date-time"},
        }
    )
    def get_schedules(self, job: Job) -> list[str]:
        return [iso_utc(run.due_at) for run in job.next_runs]  # type: ignore[attr-defined]

    @extend_schema_field(RUN_COUNTS_SCHEMA)
    def get_run_counts(self, job: Job) -> dict[str, int]:
        counted: dict[str, int] = job.run_counts  # type: ignore[attr-defined]
        return {status: counted.get(status, 0) for status in Status.values}


BULK_FILTER_HELP = (
    'The list\'s filters as an object, e.g. {"label.team": "a", "payload.training.id": 42}. '
    + FILTER_HELP
)


class JobBulkRescheduleSerializer(BulkRescheduleSerializer):
    filter = serializers.DictField(child=BoundedJSONField(), help_text=BULK_FILTER_HELP)


class JobBulkCancelSerializer(BulkCancelSerializer):
    filter = serializers.DictField(child=BoundedJSONField(), help_text=BULK_FILTER_HELP)
