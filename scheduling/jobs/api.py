"""Keyed jobs over HTTP: PUT, GET, PATCH and DELETE /api/jobs/{key}/, POST /api/jobs/ with the
key in the body (MyCoach's request, verbatim), a filtered list, and bulk cancel and reschedule
over the same filters. The writes are the services in scheduling/jobs/services.py; this module
parses, checks shapes and answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar, TypeVar

from django.db.models import Prefetch, QuerySet
from django.http import Http404
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from scheduling.api.defaults import FrameworkViewDefaults
from scheduling.api.parsers import JSONParser
from scheduling.api.serializers import (
    DATETIME_EXAMPLE,
    BoundedJSONField,
    BulkCancelSerializer,
    BulkCountSerializer,
    BulkRescheduleSerializer,
    ScheduledEventSerializer,
    StrictDateTimeField,
)
from scheduling.api.throttles import BulkRateThrottle
from scheduling.api.views import BAD_REQUEST, ModelChangePermission, ModelViewPermission
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.jobs.services import (
    KEY_FORM,
    KEY_PATTERN,
    RESERVED_KEYS,
    JobError,
    JobFilter,
    check_key,
    check_label_name,
    check_labels,
    check_payload,
    check_schedules,
    job_cancel_many,
    job_delete,
    job_patch,
    job_put,
    job_reschedule_many,
)
from scheduling.models import Status, iso_utc
from scheduling.targets import check_callback

T = TypeVar("T")

PAYLOAD_SEGMENT = re.compile(r"[A-Za-z0-9_-]{1,100}")
MAX_PAYLOAD_DEPTH = 16
# A job's answer lists its pending runs and this many of its latest other runs.
RUN_HISTORY = 50
NOT_FILTERS = frozenset({"limit", "offset", "format"})  # pagination and format, in the list
FILTER_FORMS = "label.<name>, payload.<path> (e.g. payload.training.id), status, key, key_prefix"
FILTER_HELP = (
    "Filters: `label.<name>=<value>` (a label equals the value), `payload.<path>=<value>` "
    "(a payload field, e.g. `payload.training.id=42`; `42` matches the number or the string, "
    "`true`/`false`/`null` the JSON value or the string), `status=<run status>` (jobs with a "
    "run in that status: " + ", ".join(Status.values) + "), `key`, `key_prefix`. Repeat a "
    "filter to match any of its values; different filters must all match."
)


def checked(check: Callable[[Any], T], value: Any) -> T:
    """Run a check from scheduling.jobs as a field validation."""
    try:
        return check(value)
    except JobError as exc:
        raise serializers.ValidationError(exc.message) from None


def service_call(service: Callable[..., T], **kwargs: Any) -> T:
    try:
        return service(**kwargs)
    except JobError as exc:
        raise serializers.ValidationError({exc.field: [exc.message]}) from None
    except Job.DoesNotExist:
        raise Http404("No job has this key.") from None


# --- fields --------------------------------------------------------------------------------

CALLBACK_SCHEMA = {
    "oneOf": [
        {
            "type": "object",
            "title": "Queue callback",
            "description": "Plain JSON on the named queue: a Redis list or a durable RabbitMQ "
            "queue, for a consumer in any language.",
            "properties": {
                "type": {"type": "string", "enum": ["queue"]},
                "queue": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$"},
            },
            "required": ["type", "queue"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "title": "Task callback",
            "description": "A Celery task message; the queue defaults to the task's route. The "
            "task must be registered in this project's Celery app, or declared external in "
            "SCHEDULING_EXTERNAL_TASKS.",
            "properties": {
                "type": {"type": "string", "enum": ["task"]},
                "task": {"type": "string", "example": "billing.tasks.charge"},
                "queue": {"type": "string"},
            },
            "required": ["type", "task"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "title": "RabbitMQ callback",
            "description": "The payload alone is the message body (JSON), on the named queue of "
            "the configured broker (a durable RabbitMQ queue, or the Redis list of that name). "
            "`data.payload` is the job's payload; answers show it as `payload`.",
            "properties": {
                "type": {"type": "string", "enum": ["rabbitmq"]},
                "data": {
                    "type": "object",
                    "properties": {
                        "queue": {
                            "type": "string",
                            "pattern": r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$",
                        },
                        "payload": {"type": "object", "additionalProperties": True},
                    },
                    "required": ["queue"],
                    "additionalProperties": False,
                },
            },
            "required": ["type", "data"],
            "additionalProperties": False,
        },
    ],
    "example": {"type": "queue", "queue": "reminders"},
}


@extend_schema_field(CALLBACK_SCHEMA)
class CallbackField(BoundedJSONField):
    def to_internal_value(self, data: Any) -> Any:
        # Over HTTP a task must be one this project knows (or declared external): a typo would
        # otherwise wait, unseen, for a worker that never comes.
        return checked(partial(check_callback, known_task=True), super().to_internal_value(data))


class KeyField(serializers.CharField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(trim_whitespace=False, help_text=f"The job's key: {KEY_FORM}.", **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):  # not even a number: keys are text
            raise serializers.ValidationError(f"Enter a key of {KEY_FORM}; got {data!r:.100}.")
        return checked(check_key, super().to_internal_value(data))


@extend_schema_field({"type": "object", "additionalProperties": True, "example": {"a": 1}})
class PayloadField(BoundedJSONField):
    def to_internal_value(self, data: Any) -> Any:
        return checked(check_payload, super().to_internal_value(data))


@extend_schema_field(
    {"type": "object", "additionalProperties": {"type": "string"}, "example": {"team": "a"}}
)
class LabelsField(BoundedJSONField):
    def to_internal_value(self, data: Any) -> Any:
        return checked(check_labels, super().to_internal_value(data))


class SchedulesField(serializers.ListField):
    child = StrictDateTimeField()
    default_error_messages = {
        "not_a_list": f'Enter a list of ISO 8601 instants with an offset or Z, e.g. ["{DATETIME_EXAMPLE}"].'
    }

    def to_internal_value(self, data: Any) -> Any:
        return checked(check_schedules, super().to_internal_value(data))


# --- serializers ---------------------------------------------------------------------------


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
        return JobRunSerializer(runs, many=True).data


BULK_FILTER_HELP = (
    'The list\'s filters as an object, e.g. {"label.team": "a", "payload.training.id": 42}. '
    + FILTER_HELP
)


class JobBulkRescheduleSerializer(BulkRescheduleSerializer):
    filter = serializers.DictField(child=BoundedJSONField(), help_text=BULK_FILTER_HELP)


class JobBulkCancelSerializer(BulkCancelSerializer):
    filter = serializers.DictField(child=BoundedJSONField(), help_text=BULK_FILTER_HELP)


# --- filters -------------------------------------------------------------------------------


def parse_job_filter(params: Mapping[str, Sequence[str]]) -> JobFilter:
    """A JobFilter from query parameters; a 400 names every parameter it cannot use."""
    parts: dict[str, Any] = {"labels": {}, "payload": {}}
    errors: dict[str, list[str]] = {}
    for name, values in params.items():
        try:
            read_filter(parts, name, list(values))
        except JobError as exc:
            errors[exc.field] = [exc.message]
    if errors:
        raise serializers.ValidationError(errors)
    return JobFilter(**parts)


def read_filter(parts: dict[str, Any], name: str, values: list[str]) -> None:
    check_filter_values(name, values)
    if name.startswith("label."):
        parts["labels"][check_label_name(name.removeprefix("label."), name)] = values
    elif name.startswith("payload."):
        parts["payload"][payload_path(name)] = values
    elif name == "status":
        parts["statuses"] = statuses(values)
    elif name == "key":
        parts["keys"] = values
    elif name == "key_prefix":
        parts["key_prefix"] = values[-1]
    else:
        raise JobError(name, f"Unknown filter; accepted: {FILTER_FORMS}.")


def check_filter_values(name: str, values: list[str]) -> None:
    """An empty filter would select every job: refuse it, and text PostgreSQL cannot hold."""
    if not values or any(not value.strip() for value in values):
        raise JobError(name, "Enter a value; an empty filter would select every job.")
    if any("\x00" in value for value in values):
        raise JobError(name, "Null characters are not allowed.")
    if not all(is_utf8(value) for value in values):
        raise JobError(name, "Enter text that is valid UTF-8 (no lone surrogates).")


def is_utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def payload_path(name: str) -> tuple[str, ...]:
    path = tuple(name.split(".")[1:])
    if len(path) > MAX_PAYLOAD_DEPTH or not all(PAYLOAD_SEGMENT.fullmatch(key) for key in path):
        raise JobError(
            name,
            f"Enter payload.<key>[.<key>…], at most {MAX_PAYLOAD_DEPTH} keys of letters, "
            "digits, _ and -, e.g. payload.training.id.",
        )
    return path


def statuses(values: list[str]) -> list[str]:
    chosen = [one.strip() for value in values for one in value.split(",") if one.strip()]
    unknown = sorted(set(chosen) - set(Status.values))
    if unknown or not chosen:
        raise JobError("status", f"Enter one or more of {', '.join(Status.values)}.")
    return chosen


def body_filter(selection: Mapping[str, Any]) -> dict[str, list[str]]:
    """A bulk body's filter as query parameters: the list and the bulk select alike."""
    return {
        name: [item if isinstance(item, str) else json.dumps(item) for item in as_list(value)]
        for name, value in selection.items()
    }


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


# --- the view ------------------------------------------------------------------------------


class JobPermission(ModelViewPermission):
    """A PUT or a POST may create or replace a job: it needs both the add and the change
    permission (the bulk actions, POST too, set their own)."""

    perms_map = {
        **ModelViewPermission.perms_map,
        "PUT": ["%(app_label)s.add_%(model_name)s", "%(app_label)s.change_%(model_name)s"],
        "POST": ["%(app_label)s.add_%(model_name)s", "%(app_label)s.change_%(model_name)s"],
    }


# MyCoach's v2 scheduler request (the issue's shape; the instants are the article's "90 … 15 min
# before the training").
MYCOACH_EXAMPLE = OpenApiExample(
    "MyCoach scheduler request",
    value={
        "key": "training-invitations-42",
        "schedules": [
            "2026-12-24T12:30:00Z",
            "2026-12-24T12:45:00Z",
            "2026-12-24T13:00:00Z",
            "2026-12-24T13:15:00Z",
            "2026-12-24T13:30:00Z",
            "2026-12-24T13:45:00Z",
        ],
        "callback": {
            "type": "rabbitmq",
            "data": {
                "queue": "training.invitations.notifications",
                "payload": {"trainingId": 42},
            },
        },
    },
    request_only=True,
)
KEY_PARAMETER = OpenApiParameter(
    "key", str, OpenApiParameter.PATH, description=f"The job's key: {KEY_FORM}."
)
NOT_FOUND = OpenApiResponse(description="No job has this key.")


@extend_schema_view(
    list=extend_schema(
        summary="List jobs, filtered by labels, payload fields and run status",
        description=FILTER_HELP,
        parameters=[
            OpenApiParameter("status", str, many=True, enum=Status.values),
            OpenApiParameter("key", str, many=True, description="Exact keys."),
            OpenApiParameter("key_prefix", str, description="Keys starting with this."),
        ],
        responses={200: JobSerializer(many=True), 400: BAD_REQUEST},
    ),
    retrieve=extend_schema(
        summary="A job with its runs",
        parameters=[KEY_PARAMETER],
        responses={200: JobSerializer, 404: NOT_FOUND},
    ),
    create=extend_schema(
        summary="Create or replace a job, the key in the body",
        description="PUT's semantics with the key in the body, so a client written for "
        "MyCoach's scheduler (`key`, `schedules`, a `rabbitmq` callback whose `data.payload` "
        "is the message body) works unchanged. 201 when the key is new, 200 when it replaced "
        "a job; sending the same body again changes nothing and publishes nothing twice.",
        request=JobPostSerializer,
        responses={200: JobSerializer, 201: JobSerializer, 400: BAD_REQUEST},
        examples=[MYCOACH_EXAMPLE],
    ),
    update=extend_schema(
        summary="Create or replace a job by key",
        description="The pending runs become exactly `schedules`: a pending instant stays as it "
        "is, an instant already delivered is not scheduled again (one that expired, failed or "
        "was cancelled is pending again), the other pending runs are cancelled and kept as "
        "history. 201 when the key is new, 200 when it replaced a job.",
        parameters=[KEY_PARAMETER],
        request=JobPutSerializer,
        responses={200: JobSerializer, 201: JobSerializer, 400: BAD_REQUEST},
    ),
    partial_update=extend_schema(
        summary="Change a job's callback, payload or labels",
        description="Each field given replaces the stored one; pending runs publish the new "
        "values.",
        parameters=[KEY_PARAMETER],
        request=JobPatchSerializer,
        responses={200: JobSerializer, 400: BAD_REQUEST, 404: NOT_FOUND},
    ),
    destroy=extend_schema(
        summary="Cancel a job's pending runs",
        description="The job and its runs stay, as history; a later PUT schedules it again.",
        parameters=[KEY_PARAMETER],
        responses={200: JobSerializer, 404: NOT_FOUND},
    ),
)
class JobViewSet(FrameworkViewDefaults, viewsets.GenericViewSet):
    queryset = Job.objects.all()
    serializer_class = JobSerializer
    permission_classes = [JobPermission]
    parser_classes = [JSONParser]
    filter_backends: list[Any] = []
    lookup_field = "key"
    # Odd keys reach the view, which names the accepted form; a NUL cannot be in any key.
    lookup_value_regex = "[^/\x00]+"

    def get_queryset(self) -> QuerySet[Job]:
        return with_runs(Job.objects.all())

    def list(self, request: Request) -> Response:
        params = {k: v for k, v in request.query_params.lists() if k not in NOT_FILTERS}
        jobs = with_runs(parse_job_filter(params).jobs())
        page = self.paginate_queryset(jobs)
        return self.get_paginated_response(JobSerializer(page, many=True).data)

    def retrieve(self, request: Request, key: str) -> Response:
        return Response(JobSerializer(self.get_object()).data)

    def get_object(self) -> Job:
        existing_key(self.kwargs["key"])
        return super().get_object()

    def create(self, request: Request) -> Response:
        body = validated(JobPostSerializer, request)
        job, created = service_call(job_put, **body)
        # Keys are URL-safe (KEY_PATTERN): the job's own URL is this one plus the key.
        headers = {"Location": request.build_absolute_uri(f"{request.path}{job.key}/")}
        return Response(job_data(job.key), status=201 if created else 200, headers=headers)

    def update(self, request: Request, key: str) -> Response:
        body = validated(JobPutSerializer, request)
        job, created = service_call(job_put, key=checked_key(key), **body)
        return Response(job_data(job.key), status=201 if created else 200)

    def partial_update(self, request: Request, key: str) -> Response:
        body = validated(JobPatchSerializer, request)
        job = service_call(job_patch, key=existing_key(key), **body)
        return Response(job_data(job.key))

    def destroy(self, request: Request, key: str) -> Response:
        service_call(job_delete, key=existing_key(key))
        return Response(job_data(key))

    @extend_schema(
        request=JobBulkRescheduleSerializer,
        responses={200: BulkCountSerializer, 400: BAD_REQUEST},
        summary="Reschedule the pending runs of the jobs a filter selects",
        description="Send `due_at` (move them to a time) or `shift` (move them by an ISO 8601 "
        "duration, e.g. PT2H). Only pending runs move; each moved run's version goes up by one.",
    )
    @action(
        detail=False,
        methods=["post"],
        permission_classes=[ModelChangePermission],
        throttle_classes=[BulkRateThrottle],
    )
    def reschedule(self, request: Request) -> Response:
        body = validated(JobBulkRescheduleSerializer, request)
        selection = parse_bulk_filter(body["filter"])
        moved = service_call(
            job_reschedule_many,
            selection=selection,
            due_at=body.get("due_at"),
            shift=body.get("shift"),
        )
        return Response({"count": moved})

    @extend_schema(
        request=JobBulkCancelSerializer,
        responses={200: BulkCountSerializer, 400: BAD_REQUEST},
        summary="Cancel the pending runs of the jobs a filter selects",
    )
    @action(
        detail=False,
        methods=["post"],
        permission_classes=[ModelChangePermission],
        throttle_classes=[BulkRateThrottle],
    )
    def cancel(self, request: Request) -> Response:
        body = validated(JobBulkCancelSerializer, request)
        selection = parse_bulk_filter(body["filter"])
        return Response({"count": job_cancel_many(selection=selection, reason=body["reason"])})

    def http_method_not_allowed(  # type: ignore[override]  # DRF narrows Django's request
        self, request: Request, *args: Any, **kwargs: Any
    ) -> Response:
        """PUT /api/jobs/cancel/ meant a job keyed "cancel": say why there can be none."""
        route = request.resolver_match.url_name if request.resolver_match else ""
        reserved = (route or "").removeprefix("job-")
        if request.method == "PUT" and reserved in RESERVED_KEYS:
            checked_key(reserved)
        return super().http_method_not_allowed(request, *args, **kwargs)


def with_runs(jobs: QuerySet[Job]) -> QuerySet[Job]:
    """Prefetches each job's pending runs and its RUN_HISTORY latest other runs."""
    pending = ScheduledJobRun.objects.filter(status=Status.PENDING).order_by("due_at", "pk")
    others = ScheduledJobRun.objects.exclude(status=Status.PENDING).order_by("-due_at", "-pk")
    return jobs.prefetch_related(
        Prefetch("runs", queryset=pending, to_attr="pending_runs"),
        Prefetch("runs", queryset=others[:RUN_HISTORY], to_attr="recent_runs"),
    ).order_by("key")


def job_data(key: str) -> Any:
    return JobSerializer(with_runs(Job.objects.filter(key=key)).get()).data


def validated(serializer_class: type[serializers.Serializer], request: Request) -> Any:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def existing_key(key: str) -> str:
    """A key no job can have (a NUL, say, which PostgreSQL refuses to compare) is a 404."""
    if not KEY_PATTERN.fullmatch(key):
        raise Http404("No job has this key.")
    return key


def checked_key(key: str) -> str:
    try:
        return check_key(key)
    except JobError as exc:
        raise serializers.ValidationError({"key": [exc.message]}) from None


def parse_bulk_filter(selection: Mapping[str, Any]) -> JobFilter:
    try:
        return parse_job_filter(body_filter(selection))
    except serializers.ValidationError as exc:
        raise serializers.ValidationError({"filter": exc.detail}) from None
