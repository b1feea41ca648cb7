"""`/api/schedules/`: recurring schedules by name, their fire-time preview, a manual trigger,
and their occurrences. Writes go through the model's save(), which validates and keeps the
pending occurrence in step."""

from __future__ import annotations

import copy
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery
from django.utils import timezone as django_timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from scheduling.ops.api.defaults import FrameworkViewDefaults
from scheduling.ops.api.params import whole_number
from scheduling.ops.api.serializers import (
    BoundedJSONField,
    FieldsBuiltOnce,
    IsoDurationField,
    ScheduledEventSerializer,
    StrictDateTimeField,
)
from scheduling.ops.api.throttles import ScheduleWriteThrottle
from scheduling.ops.api.views import ModelChangePermission, ModelViewPermission, as_bad_request
from scheduling.recurring.calendars import PlannedFire, schedule_plan
from scheduling.recurring.cron import time_zone
from scheduling.recurring.jitter import JITTER_ERRORS, MAX_JITTER
from scheduling.recurring.models import RecurringSchedule, ScheduledOccurrence
from scheduling.recurring.policy_api import (
    POLICY_FIELDS,
    POLICY_READ_ONLY,
    SchedulePolicySerializer,
    dst_outlook_body,
)
from scheduling.recurring.services import schedule_trigger
from scheduling.recurring.validation import schedule_errors
from scheduling.rows.states import Status
from scheduling.time.times import iso_utc

PREVIEW_MAX = 1000


class ScheduleSerializer(FieldsBuiltOnce, SchedulePolicySerializer):  # + overlap, DST, ...
    starts_at = StrictDateTimeField(
        required=False, help_text="Default: now. @every counts from here."
    )
    ends_at = StrictDateTimeField(required=False, allow_null=True)
    max_lateness = IsoDurationField(
        required=False, allow_null=True, help_text="ISO 8601, e.g. PT15M; later occurrences expire."
    )
    catchup_window = IsoDurationField(
        required=False,
        help_text="ISO 8601, e.g. P1D (the default) or PT6H: with fire_all, the fire times "
        "missed within this much before now are published after downtime or a past starts_at.",
    )
    jitter = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_JITTER,
        help_text=RecurringSchedule._meta.get_field("jitter").help_text,
        error_messages={**JITTER_ERRORS},  # typed by the field (str or lazy str)
    )
    template_timezone = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        max_length=64,
        help_text="IANA name the template variables are computed in, e.g. America/Los_Angeles; "
        "empty or null: the schedule's timezone.",
    )
    next_fire_at = StrictDateTimeField(read_only=True, allow_null=True)
    payload_template = BoundedJSONField(
        required=False, help_text=RecurringSchedule._meta.get_field("payload_template").help_text
    )
    calendars = serializers.ListField(
        child=serializers.SlugField(max_length=100),
        required=False,
        max_length=100,
        help_text=RecurringSchedule._meta.get_field("calendars").help_text,
    )

    class Meta:
        model = RecurringSchedule
        fields = (
            "name",
            "cron",
            "timezone",
            "template_timezone",
            "task",
            "queue",
            "payload_template",
            "enabled",
            "misfire_policy",
            "max_lateness",
            "catchup_window",
            "jitter",
            "calendars",
            "calendar_policy",
            "starts_at",
            "ends_at",
            "version",
            "last_fired_at",
            "next_fire_at",
            "created_at",
            "updated_at",
            *POLICY_FIELDS,
        )
        read_only_fields = (
            "version",
            "last_fired_at",
            "created_at",
            "updated_at",
            *POLICY_READ_ONLY,
        )

    def validate_payload_template(self, value: Any) -> Any:
        # A form-encoded "null" is parsed after DRF's null check; the column is NOT NULL.
        if value is None:
            raise serializers.ValidationError("Enter a JSON value other than null, e.g. {}.")
        return value

    def validate_template_timezone(self, value: str | None) -> str:
        return value or ""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if self.instance is None:
            candidate = RecurringSchedule(**attrs)
            check_fires = True
        else:
            candidate = copy.copy(self.instance)
            for name, value in attrs.items():
                setattr(candidate, name, value)
            check_fires = candidate.timeline_changed()
        errors = schedule_errors(candidate, check_fires=check_fires, known_task=True)
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class OccurrenceSerializer(ScheduledEventSerializer):
    fire_id = serializers.CharField(read_only=True)

    class Meta(ScheduledEventSerializer.Meta):
        model = ScheduledOccurrence
        fields = (
            *ScheduledEventSerializer.Meta.fields,
            "fire_id",
            "schedule_version",
            "manual",
            "missed_run",
            "catch_up",
        )
        read_only_fields = fields


PreviewSerializer = inline_serializer(
    "SchedulePreview",
    {
        "schedule": serializers.CharField(),
        "timezone": serializers.CharField(),
        "fire_times": inline_serializer(
            "FireTime",
            {
                "at": serializers.DateTimeField(help_text="UTC"),
                "local": serializers.CharField(help_text="The same instant in the schedule's zone"),
                "status": serializers.ChoiceField(
                    choices=["moved", "skipped"],
                    required=False,
                    help_text="Only where the schedule's calendars moved the fire or skipped it "
                    "(one skipped entry per excluded span)",
                ),
                "planned": serializers.DateTimeField(
                    required=False,
                    help_text="With status: the cron's own time (UTC), moved from or skipped",
                ),
            },
            many=True,
        ),
    },
)
DstOutlookSerializer = inline_serializer(
    "DstOutlook",
    {
        "at": serializers.DateTimeField(help_text="The change, UTC"),
        "change": serializers.CharField(),
        "policy": serializers.CharField(help_text="The DST policy that applies"),
        "window": serializers.CharField(help_text="The local span listed"),
        "fire_times": serializers.ListField(child=serializers.DateTimeField()),
    },
    many=True,
)
TriggerSerializer = inline_serializer(
    "ScheduleTrigger",
    {
        "id": serializers.CharField(help_text="The published message's id"),
        "occurrence": serializers.IntegerField(read_only=True),
        "due_at": serializers.DateTimeField(),
    },
)


class OccurrencesPermission(ModelViewPermission):
    """A schedule's occurrences are occurrences: they need their own view permission too, as
    at their own endpoint."""

    def has_permission(self, request: Request, view: Any) -> bool:
        occurrences = "scheduling_recurring.view_scheduledoccurrence"
        return super().has_permission(request, view) and request.user.has_perm(occurrences)


class ScheduleViewSet(FrameworkViewDefaults, viewsets.ModelViewSet):
    serializer_class = ScheduleSerializer
    permission_classes = [ModelViewPermission]
    throttle_classes = [ScheduleWriteThrottle]
    lookup_field = "name"
    lookup_value_regex = r"[-a-zA-Z0-9_]+"
    filterset_fields = (
        "enabled",
        "misfire_policy",
        "timezone",
        "template_timezone",
        "task",
        "queue",
    )

    def get_queryset(self) -> QuerySet[RecurringSchedule]:
        if self.action == "create":
            # A creation's permission checks need only the model, and its answer is the saved
            # row: the annotation would be built twice a request and read by nothing.
            return RecurringSchedule.objects.all()
        next_fire = ScheduledOccurrence.objects.filter(
            schedule=OuterRef("pk"), status=Status.PENDING, manual=False, catch_up=False
        ).values("due_at")[:1]
        # The model declares next_fire_at, which save() sets: the annotation fills the same one.
        annotated = RecurringSchedule.objects.annotate(
            next_fire_at=Subquery(next_fire)  # type: ignore[no-redef]
        )
        return annotated.order_by("name")

    def perform_create(self, serializer: serializers.BaseSerializer[Any]) -> None:
        with as_bad_request():
            serializer.save()

    def perform_update(self, serializer: serializers.BaseSerializer[Any]) -> None:
        with as_bad_request():
            serializer.save()
        # Answer with the new next fire time, which the save just materialised.
        serializer.instance = self.stored(serializer)

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        self.perform_create(serializer)
        # Not read back: the saved schedule is as stored, and save() set its next_fire_at.
        return Response(serializer.data, status=status.HTTP_201_CREATED)

    def stored(self, serializer: serializers.BaseSerializer[Any]) -> RecurringSchedule:
        """The saved schedule as the API shows it, with its next fire time annotated."""
        saved: RecurringSchedule = serializer.instance  # type: ignore[assignment]
        return self.get_queryset().get(pk=saved.pk)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "count", int, description=f"How many fire times, 1-{PREVIEW_MAX} (default 10)."
            )
        ],
        responses={200: PreviewSerializer},
        summary="The next fire times, from now",
    )
    @action(detail=True, methods=["get"])
    def preview(self, request: Request, name: str | None = None) -> Response:
        schedule = self.get_object()
        count = preview_count(request.query_params.get("count", "10"))
        zone = time_zone(schedule.timezone)
        plan = schedule_plan(schedule, count=count, after=django_timezone.now())
        fire_times = [preview_entry(planned, zone) for planned in plan]
        return Response(
            {"schedule": schedule.name, "timezone": schedule.timezone, "fire_times": fire_times}
        )

    @extend_schema(
        responses={200: DstOutlookSerializer},
        summary="What the schedule does at its zone's next DST changes",
        description="Each change, the DST policy that applies and the fire times around it; "
        "empty for a zone without DST and for @every and @at.",
    )
    @action(detail=True, methods=["get"], pagination_class=None)  # a list of two, unpaginated
    def dst(self, request: Request, name: str | None = None) -> Response:
        schedule = self.get_object()
        return Response(dst_outlook_body(schedule, now=django_timezone.now()))

    @extend_schema(
        request=None,
        responses={202: TriggerSerializer},
        summary="Fire now, once, outside the timeline",
        description="The next sweep publishes it; the schedule's own next fire is unchanged.",
    )
    @action(detail=True, methods=["post"], permission_classes=[ModelChangePermission])
    def trigger(self, request: Request, name: str | None = None) -> Response:
        occurrence = schedule_trigger(schedule=self.get_object())
        body = {
            "id": occurrence.fire_id,
            "occurrence": occurrence.pk,
            "due_at": iso_utc(occurrence.due_at),
        }
        return Response(body, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        responses={200: OccurrenceSerializer(many=True)}, summary="Occurrences, newest first"
    )
    @action(detail=True, methods=["get"], permission_classes=[OccurrencesPermission])
    def occurrences(self, request: Request, name: str | None = None) -> Response:
        schedule = self.get_object()
        rows = ScheduledOccurrence.objects.filter(schedule=schedule).select_related("schedule")
        page = self.paginate_queryset(rows.order_by("-due_at", "-pk"))
        data = OccurrenceSerializer(
            page if page is not None else rows, many=True, context=self.get_serializer_context()
        ).data
        return self.get_paginated_response(data) if page is not None else Response(data)


def preview_entry(planned: PlannedFire, zone: Any) -> dict[str, str]:
    """A fire time; one that the schedule's calendars moved or skipped says so."""
    at = planned.at or planned.planned
    entry = {"at": iso_utc(at), "local": at.astimezone(zone).isoformat()}
    if planned.status != "fires":
        entry.update(status=planned.status, planned=iso_utc(planned.planned))
    return entry


def preview_count(value: str) -> int:
    return whole_number("count", value, low=1, high=PREVIEW_MAX)
