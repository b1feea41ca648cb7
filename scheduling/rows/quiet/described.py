"""A scheduled row's quiet hours on its admin page: what its model declares for it, the policy,
and the next quiet spans, in the spans' own time zone. Whether they held this row, and until
when, is in the row's timeline ("held for quiet hours until 07:00 (Europe/Paris)")."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib import admin
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from scheduling.rows.quiet.hours import (
    ExcludedSpans,
    QuietPolicy,
    declared_for,
    in_own_zone,
    stored_calendar,
)

UPCOMING = 2


@admin.display(description="Quiet hours")
def quiet_hours(row: Any) -> str:
    model = type(row)
    try:
        declared = declared_for(model, row)
        spans = stored_calendar(model, declared) if isinstance(declared, str) else declared
    except ImproperlyConfigured as exc:
        return str(exc)
    if spans is None:
        return "None for this row."
    source = f"calendar {declared}" if isinstance(declared, str) else str(spans)
    return f"{source}; {policy_words(model)}.{upcoming(spans)}"


def policy_words(model: type[Any]) -> str:
    if model.quiet_policy == QuietPolicy.SKIP:
        return "a row due in a quiet span is skipped (cancelled)"
    if model.quiet_policy == QuietPolicy.FOLD:
        entity = ", ".join(model.quiet_fold_by)
        return f"held to the span's end, one row per {entity} (the latest wins)"
    return "a row due in a quiet span is held to its end"


def upcoming(spans: ExcludedSpans) -> str:
    """The next quiet spans, where the spans can list them (a calendar, DailyQuietHours)."""
    listing = getattr(spans, "spans", None)
    if not callable(listing):
        return ""
    found: list[tuple[datetime, datetime]] = listing(timezone.now(), UPCOMING)
    shown = "; ".join(f"{_local(spans, start)} to {_local(spans, end)}" for start, end in found)
    return f" Next: {shown}." if shown else ""


def _local(spans: ExcludedSpans, at: datetime) -> str:
    return f"{in_own_zone(spans, at):%a %Y-%m-%d %H:%M %Z}"
