"""The FilterSet base every domain's scheduled-row list and bulk actions filter with."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import django_filters  # type: ignore[import-untyped]
from django import forms

from scheduling.api.serializers import ACCEPTED_DATETIME, DATETIME_EXAMPLE, parse_aware_datetime
from scheduling.base import Status


class AwareDateTimeFormField(forms.Field):
    """A form field for an ISO 8601 datetime with an offset or Z; naive values are refused."""

    widget = forms.TextInput(attrs={"placeholder": DATETIME_EXAMPLE})

    def to_python(self, value: Any) -> datetime | None:
        if value in self.empty_values:
            return None
        try:
            return parse_aware_datetime(value.strip() if isinstance(value, str) else value)
        except ValueError as exc:
            raise forms.ValidationError(str(exc), code="invalid") from None


class AwareDateTimeFilter(django_filters.Filter):
    field_class = AwareDateTimeFormField


class ScheduledEventFilterSet(django_filters.FilterSet):
    """Subclasses set Meta.model and add filters on their entity, e.g.

    artist = django_filters.NumberFilter(field_name="purchase__release__artist")
    """

    status = django_filters.MultipleChoiceFilter(
        choices=Status.choices, help_text="One or more of: " + ", ".join(Status.values)
    )
    due_after = AwareDateTimeFilter(
        field_name="due_at", lookup_expr="gte", help_text=f"due_at >= this, {ACCEPTED_DATETIME}"
    )
    due_before = AwareDateTimeFilter(
        field_name="due_at", lookup_expr="lt", help_text=f"due_at < this, {ACCEPTED_DATETIME}"
    )
