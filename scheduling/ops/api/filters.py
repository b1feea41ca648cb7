"""The FilterSet base every domain's scheduled-row list and bulk actions filter with."""

from __future__ import annotations

from typing import Any

import django_filters  # type: ignore[import-untyped]

from scheduling.ops.api.params import ascii_digits_only
from scheduling.ops.forms import AwareDateTimeFormField
from scheduling.rows.querysets import ScheduledEventQuerySet
from scheduling.rows.states import LIFECYCLE_STATES, Status
from scheduling.time.parsing import ACCEPTED_DATETIME


class AwareDateTimeFilter(django_filters.Filter):
    field_class = AwareDateTimeFormField


class ScheduledEventFilterSet(django_filters.FilterSet):
    """Subclasses set Meta.model and add filters on their entity, e.g.

    artist = django_filters.NumberFilter(field_name="purchase__release__artist")
    """

    status = django_filters.MultipleChoiceFilter(
        choices=Status.choices, help_text="One or more of: " + ", ".join(Status.values)
    )
    lifecycle = django_filters.ChoiceFilter(
        choices=[(state, state) for state in LIFECYCLE_STATES],
        method="filter_lifecycle",
        help_text="One of: " + ", ".join(LIFECYCLE_STATES) + " (awaiting_handling: published, "
        "not yet handled; in_flight: an at-most-once effect began and has not reported back; "
        "handled: published and handled).",
    )
    due_after = AwareDateTimeFilter(
        field_name="due_at", lookup_expr="gte", help_text=f"due_at >= this, {ACCEPTED_DATETIME}"
    )
    due_before = AwareDateTimeFilter(
        field_name="due_at", lookup_expr="lt", help_text=f"due_at < this, {ACCEPTED_DATETIME}"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        ascii_digits_only(self.filters)  # ?artist=\u0665 (Arabic-Indic 5) is no artist

    def filter_lifecycle(
        self, queryset: ScheduledEventQuerySet[Any], name: str, value: str
    ) -> ScheduledEventQuerySet[Any]:
        return queryset.lifecycle(value)
