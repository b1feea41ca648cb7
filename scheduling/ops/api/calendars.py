"""`/api/calendars/`: calendars by name, and their next excluded spans. Writes go through the
model's save(), which validates (each refusal naming the field and the accepted form) and, with
the recurring app, recomputes the fire times of the schedules that use the calendar."""

from __future__ import annotations

import copy
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone as django_timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from scheduling.ops.api.defaults import FrameworkViewDefaults
from scheduling.ops.api.views import ModelViewPermission, as_bad_request
from scheduling.time.calendars.models import EDITABLE_FIELDS, Calendar, calendar_errors
from scheduling.time.calendars.parsing import FORMS, OPERATIONS, parse_timezone
from scheduling.time.calendars.rules import CalendarError
from scheduling.time.parsing import parse_aware_datetime
from scheduling.time.times import iso_utc

MAX_ITEMS = 1000
SPANS_MAX = 100


def text_list(field: str) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        max_length=MAX_ITEMS,
        help_text=f"Enter {FORMS[field]}.",
    )


class StepSerializer(serializers.Serializer):
    op = serializers.ChoiceField(
        choices=OPERATIONS,
        error_messages={"invalid_choice": 'Enter "include" or "exclude"; got "{input}".'},
    )
    calendar = serializers.SlugField(max_length=100)


class CalendarSerializer(serializers.ModelSerializer):
    holidays = text_list("holidays")
    holiday_rules = text_list("holiday_rules")
    daily_windows = text_list("daily_windows")
    weekdays = text_list("weekdays")
    composition = serializers.ListField(
        child=StepSerializer(),
        required=False,
        max_length=MAX_ITEMS,
        help_text=Calendar._meta.get_field("composition").help_text,
    )
    timezone = serializers.CharField(max_length=64, required=False, help_text=FORMS["timezone"])

    class Meta:
        model = Calendar
        fields = (*EDITABLE_FIELDS, "created_at", "updated_at")
        read_only_fields = ("created_at", "updated_at")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        candidate = copy.copy(self.instance) if self.instance is not None else Calendar()
        for name, value in attrs.items():
            setattr(candidate, name, value)
        errors = calendar_errors(candidate)
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


SpansSerializer = inline_serializer(
    "CalendarSpans",
    {
        "calendar": serializers.CharField(),
        "timezone": serializers.CharField(),
        "spans": inline_serializer(
            "ExcludedSpan",
            {
                "start": serializers.DateTimeField(help_text="UTC, included"),
                "end": serializers.DateTimeField(help_text="UTC, excluded: the first allowed"),
                "local_start": serializers.CharField(help_text="In the calendar's zone"),
                "local_end": serializers.CharField(),
            },
            many=True,
        ),
    },
)


class CalendarViewSet(FrameworkViewDefaults, viewsets.ModelViewSet):
    serializer_class = CalendarSerializer
    permission_classes = [ModelViewPermission]
    lookup_field = "name"
    lookup_value_regex = r"[-a-zA-Z0-9_]+"
    filterset_fields = ("timezone",)

    def get_queryset(self) -> QuerySet[Calendar]:
        return Calendar.objects.order_by("name")

    def perform_create(self, serializer: serializers.BaseSerializer[Any]) -> None:
        with as_bad_request():
            serializer.save()

    def perform_update(self, serializer: serializers.BaseSerializer[Any]) -> None:
        serializer.instance.viewer = self.request.user  # type: ignore[union-attr]
        with as_bad_request():
            serializer.save()

    def perform_destroy(self, instance: Calendar) -> None:
        instance.viewer = self.request.user
        with as_bad_request():  # refused while a schedule or a calendar uses it
            instance.delete()

    @extend_schema(
        parameters=[
            OpenApiParameter("count", int, description=f"How many spans, 1-{SPANS_MAX} (10)."),
            OpenApiParameter("after", str, description="ISO 8601 with an offset; default now."),
        ],
        responses={200: SpansSerializer},
        summary="The next excluded spans",
    )
    @action(detail=True, methods=["get"])
    def spans(self, request: Request, name: str | None = None) -> Response:
        calendar = self.get_object()
        count, after = spans_query(request.query_params)
        zone = parse_timezone(calendar.timezone)
        try:
            found = calendar.rules().spans(after, count)
        except CalendarError as exc:
            raise serializers.ValidationError({"calendar": str(exc)}) from None
        spans = [
            {
                "start": iso_utc(start),
                "end": iso_utc(end),
                "local_start": start.astimezone(zone).isoformat(),
                "local_end": end.astimezone(zone).isoformat(),
            }
            for start, end in found
        ]
        return Response({"calendar": calendar.name, "timezone": calendar.timezone, "spans": spans})


def spans_query(params: Any) -> tuple[int, Any]:
    count = params.get("count", "10")
    # ASCII only: isdigit() also takes "\u00b2" (int() refuses it) and "\u0665" (read as 5).
    if not (count.isascii() and count.isdigit()) or not 1 <= int(count) <= SPANS_MAX:
        raise serializers.ValidationError(
            {"count": f"Enter a whole number from 1 to {SPANS_MAX}; got {count!r}."}
        )
    try:
        after = parse_aware_datetime(params["after"]) if "after" in params else None
    except ValueError as exc:
        raise serializers.ValidationError({"after": str(exc)}) from None
    return int(count), after or django_timezone.now()
