"""Serializers every domain's scheduled-row API builds on.

The bulk bodies select rows with a `filter` object that the view runs through the model's
FilterSet, so a bulk action selects exactly what the same list query would show.
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from typing import Any, ClassVar

from django.db import models
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from scheduling.ops.api.parsers import MAX_JSON_DEPTH
from scheduling.ops.api.routes import history_url
from scheduling.rows.history.models import Kind
from scheduling.rows.jsonvalues import JsonValueError, check_json_value
from scheduling.rows.models import SCHEDULING_FIELDS, ScheduledEvent
from scheduling.rows.states import LIFECYCLE_STATES
from scheduling.time.parsing import (
    ACCEPTED_DATETIME,
    DATETIME_EXAMPLE,
    DURATION_EXAMPLE,
    ISO_DURATION,
    iso_duration,
    parse_aware_datetime,
    parse_shift,
)


def column_range(field: models.Field[Any, Any]) -> tuple[int, int]:
    """The integers an integer column holds, as PostgreSQL's types bound them."""
    low, high = BaseDatabaseOperations.integer_field_ranges[field.get_internal_type()]
    return low, high


def row_id_field(model: type[models.Model], **kwargs: Any) -> serializers.IntegerField:
    """The id of one of `model`'s rows: from 1 to the most its primary key's column holds, so
    a larger one is a 400 naming the field rather than a query the database refuses."""
    assert model._meta.pk is not None
    return serializers.IntegerField(
        min_value=1, max_value=column_range(model._meta.pk)[1], **kwargs
    )


class StrictDateTimeField(serializers.DateTimeField):
    """An ISO 8601 datetime that must carry an offset or Z; naive values are refused."""

    default_error_messages = {
        "invalid": f"Enter {ACCEPTED_DATETIME}.",
    }

    def to_internal_value(self, value: Any) -> datetime:
        try:
            return parse_aware_datetime(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc), code="invalid") from None


@extend_schema_field({"type": "string", "format": "duration", "example": "P7D"})
class IsoDurationField(serializers.Field):
    """An ISO 8601 duration in days, hours, minutes and seconds; zero is refused."""

    default_error_messages = {
        "invalid": f"Enter an ISO 8601 duration, e.g. {DURATION_EXAMPLE}.",
        "zero": "The duration must not be zero.",
    }

    def to_internal_value(self, data: Any) -> timedelta:
        try:
            value = (
                parse_shift(data) if isinstance(data, str) and ISO_DURATION.match(data) else None
            )
        except ValueError as exc:
            raise serializers.ValidationError(str(exc), code="too_large") from None
        if value is None:
            self.fail("invalid")
        if not value:
            self.fail("zero")
        return value

    def to_representation(self, value: timedelta) -> str:
        return iso_duration(value)


class BoundedJSONField(serializers.JSONField):
    """A JSONField whose form-encoded text (parsed here, not by the body's parser) has the
    JSON parser's depth limit, and whose value follows scheduling.rows.jsonvalues' rule: no NUL or
    lone surrogate, integers within 64 bits, finite numbers; the 400 names where."""

    default_error_messages = {
        "too_deep": f"Enter JSON nested at most {MAX_JSON_DEPTH} levels deep.",
    }

    def to_internal_value(self, data: Any) -> Any:
        self.check(data)  # before DRF's own check, whose message names no place
        try:
            value = super().to_internal_value(data)
        except RecursionError:
            self.fail("too_deep")
        if value is not data:  # form-encoded text, parsed just now
            self.check(value)
        return value

    def check(self, value: Any) -> None:
        try:
            check_json_value(value, path=self.field_name or "value", max_depth=MAX_JSON_DEPTH)
        except JsonValueError as exc:
            raise serializers.ValidationError(str(exc), code="invalid") from None


@extend_schema_field({"type": "string", "format": "uri", "nullable": True})
class HistoryUrlField(serializers.Field):
    """The absolute URL of the row's timeline; null where no history route is mounted."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, value: ScheduledEvent) -> str | None:
        return history_url(value, self.context.get("request"), self.context.get("view"))


class FieldsBuiltOnce(serializers.ModelSerializer):
    """A model serializer whose fields are worked out from the model once for its class, then
    copied for each instance (as DRF copies declared fields), instead of rebuilt from the
    model's metadata on every request (a schedule's thirty: 0.8-1.3 ms a request, measured).

    Only for a serializer whose fields depend on its class alone: none chosen by the request,
    the instance or the context (get_fields, get_field_names, get_extra_kwargs)."""

    _built_fields: ClassVar[dict[type, dict[str, serializers.Field]]] = {}

    def get_fields(self) -> dict[str, serializers.Field]:
        built = self._built_fields.get(type(self))
        if built is None:
            # Two threads may both build it on a first request: the same fields either way.
            built = self._built_fields[type(self)] = super().get_fields()
        return {name: copied(field) for name, field in built.items()}


def copied(field: serializers.Field) -> serializers.Field:
    """A field of its own for one serializer: a shallow copy of a never-bound field, with its
    validators' list its own (DRF shares validators between copies too); a field holding a
    field or a queryset (a list's child, a relation) is made again from its arguments, as
    DRF's deepcopy makes every field (a schedule's thirty: 0.33 ms against 0.49)."""
    if any(isinstance(value, serializers.Field | QuerySet) for value in vars(field).values()):
        return copy.deepcopy(field)
    fresh = copy.copy(field)
    fresh.validators = list(field.validators)
    return fresh


class ScheduledEventSerializer(serializers.ModelSerializer):
    """Base for a domain's scheduled-row serializer: subclasses set Meta.model and add fields.

    class Meta(ScheduledEventSerializer.Meta):
        model = ScheduledPurchase
        fields = (*ScheduledEventSerializer.Meta.fields, "purchase", "track")
    """

    event_id = serializers.CharField(read_only=True)
    lifecycle = serializers.ChoiceField(
        choices=LIFECYCLE_STATES,
        read_only=True,
        help_text="Where the row is: the status, with delivered told apart as awaiting_handling, "
        "in_flight (an at-most-once effect began and has not reported back) or handled.",
    )
    history_url = HistoryUrlField(help_text="The row's timeline: GET it for every entry.")
    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.DateTimeField: StrictDateTimeField,
    }

    class Meta:
        model: type[ScheduledEvent]
        fields: tuple[str, ...] = (
            "id",
            "event_id",
            *SCHEDULING_FIELDS,
            "lifecycle",
            "history_url",
        )
        read_only_fields: tuple[str, ...] = fields


# A bulk filter selects by business facts; thousands of values or a megabyte of text is a
# mistake or an attack, and would only make one huge query.
MAX_FILTERS = 50
MAX_FILTER_VALUES = 1000
MAX_FILTER_TEXT = 1000


def check_filter_size(name: str, items: list[Any]) -> None:
    if len(items) > MAX_FILTER_VALUES:
        raise serializers.ValidationError(
            f"{name}: at most {MAX_FILTER_VALUES} values; got {len(items)}."
        )
    if any(len(str(one)) > MAX_FILTER_TEXT for one in items):
        raise serializers.ValidationError(
            f"{name}: each value at most {MAX_FILTER_TEXT} characters."
        )


class BulkSelectionSerializer(serializers.Serializer):
    filter = serializers.DictField(
        child=BoundedJSONField(),
        help_text="The same filters the list accepts, as an object, "
        'e.g. {"artist": 3, "status": "pending"}.',
    )
    all = serializers.BooleanField(
        default=False, help_text="Required to act on every row when the filter is empty."
    )

    def validate_filter(self, value: dict[str, Any]) -> dict[str, Any]:
        if len(value) > MAX_FILTERS:
            raise serializers.ValidationError(f"At most {MAX_FILTERS} filters; got {len(value)}.")
        for name, item in value.items():
            items = item if isinstance(item, list) else [item]
            if not all(isinstance(one, str | int | float | bool) for one in items):
                raise serializers.ValidationError(
                    f"{name}: expected a string, number or boolean, or a list of those."
                )
            check_filter_size(name, items)
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs["filter"] and not attrs["all"]:
            raise serializers.ValidationError(
                {"filter": 'An empty filter selects every row; send "all": true to mean that.'}
            )
        return attrs


class BulkRescheduleSerializer(BulkSelectionSerializer):
    due_at = StrictDateTimeField(
        required=False, help_text=f"New due time, e.g. {DATETIME_EXAMPLE}."
    )
    shift = IsoDurationField(
        required=False, help_text=f"Move by an ISO 8601 duration, e.g. {DURATION_EXAMPLE}."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("due_at" in attrs) == ("shift" in attrs):
            raise serializers.ValidationError(
                {"due_at": "Send exactly one of due_at (a datetime) or shift (a duration)."}
            )
        return super().validate(attrs)


class BulkCancelSerializer(BulkSelectionSerializer):
    reason = serializers.CharField(max_length=255, required=False, default="", allow_blank=True)


class BulkRetrySerializer(BulkSelectionSerializer):
    allow_late = serializers.BooleanField(
        default=False,
        help_text="Required to retry rows past their model's max_lateness: they would be "
        "delivered that late. Without it such a selection is refused (400) and nothing changes.",
    )


class HistoryEntrySerializer(serializers.Serializer):
    """One entry of a row's timeline (scheduling.history.timeline.Entry)."""

    at = serializers.DateTimeField(help_text="When, by the database clock (UTC).")
    kind = serializers.ChoiceField(choices=Kind.choices)
    attempt = serializers.IntegerField(
        read_only=True, help_text="The delivery attempt it belongs to."
    )
    version = serializers.IntegerField(
        read_only=True, help_text="The row's version at that moment."
    )
    actor = serializers.CharField(
        help_text="Who: api:<user>, admin:<user>, code or a name the code gave, sweep@host..."
    )
    detail = serializers.JSONField(
        help_text="What: the due times before and after a move, the error, the lateness, the "
        "cancel reason."
    )


class BulkCountSerializer(serializers.Serializer):
    count = serializers.IntegerField(read_only=True, help_text="How many rows changed.")
