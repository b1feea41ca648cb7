"""Quiet hours: spans of time in which a scheduled model's rows must not be delivered.

What a span is (`ExcludedSpans`, any object with `excluded_span(at)`, such as
`DailyQuietHours` or a stored calendar), when a row held by one is released, and what a model
declares (`quiet_hours`, `quiet_policy`, `quiet_fold_by`). Pure, but for a stored calendar
named by `quiet_hours`, which scheduling.time.calendars.models loads (and keeps a few seconds).
Applying it to rows as they are created or moved is scheduling.rows.quiet.holds.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, time
from enum import StrEnum
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured
from django.core.validators import slug_re
from django.db.models import Q

from scheduling.rows.states import Status
from scheduling.time.calendars.models import named_calendar
from scheduling.time.calendars.rules import CalendarError, CalendarRules, Window
from scheduling.time.zones import time_zone
from scheduling.time.zones import validate_time_zone as validate_time_zone  # a migration names it


@runtime_checkable
class ExcludedSpans(Protocol):
    def excluded_span(self, at: datetime) -> tuple[datetime, datetime] | None:
        """The excluded span [start, end) containing the aware `at`, or None."""
        ...


# A model's `quiet_hours`: the spans, a stored calendar's name, or a function of the row giving
# either (None: no quiet).
QuietHours = ExcludedSpans | str | Callable[[Any], ExcludedSpans | str | None]
QUIET_HOURS_FORM = (
    "an object with excluded_span(at) (e.g. DailyQuietHours()), a stored calendar's name "
    '(e.g. "nights"), a function of the row returning either or None, or None'
)


class QuietPolicy(StrEnum):
    DELIVER_AT_END = "deliver_at_end"  # due at the span's end
    FOLD = "fold"  # due at the span's end, one per entity (quiet_fold_by): the latest wins
    SKIP = "skip"  # cancelled


# Chained spans (a calendar whose spans touch) are walked this many times at most.
MAX_CHAINED_SPANS = 100

# Cancel reasons, so a domain can bring such rows back when their entity moves.
FOLDED_INTO = "folded into #"
SKIPPED = "skipped for quiet hours"


@dataclass(frozen=True)
class DailyQuietHours:
    """Every day from `start` to `end`, wall-clock times in `tz`; crosses midnight when
    `end` <= `start` (22:00 to 07:00). The calendars' daily window (scheduling.time.calendars.rules.
    Window) evaluates it, with its rule for DST: every instant whose wall time is inside is
    quiet."""

    start: time = time(22)
    end: time = time(7)
    tz: str = "Europe/Paris"

    def __post_init__(self) -> None:
        if self.start == self.end:
            raise ValueError(f"DailyQuietHours: start and end are both {self.start}: no span.")
        validate_time_zone(self.tz)  # ValidationError naming the accepted form

    @cached_property
    def window(self) -> Window:
        return Window(time_zone(self.tz), self.start, self.end)

    @property
    def zone(self) -> zoneinfo.ZoneInfo:
        return self.window.zone

    def __str__(self) -> str:
        return f"{self.start:%H:%M} to {self.end:%H:%M} ({self.tz})"

    def excluded_span(self, at: datetime) -> tuple[datetime, datetime] | None:
        """The night [start, end) holding the aware `at`, in UTC; None if not quiet. Nights
        that touch (in a spring gap) are two spans: released_at walks on."""
        return self.window.span(at.astimezone(UTC))

    def spans(self, after: datetime, count: int) -> list[tuple[datetime, datetime]]:
        """The first `count` nights that end after `after`, as a calendar lists them."""
        return CalendarRules((self.window,)).spans(after, count)


def released_at(spans: ExcludedSpans, at: datetime) -> datetime | None:
    """The first instant from `at` outside every span, if `at` is in one; else None."""
    span = spans.excluded_span(at)
    if span is None:
        return None
    for _ in range(MAX_CHAINED_SPANS):
        following = spans.excluded_span(span[1])
        if following is None:
            return span[1]
        span = following
    raise ValueError(f"Quiet hours from {at.isoformat()} never end: {spans!r}")


def in_own_zone(spans: ExcludedSpans, at: datetime) -> datetime:
    """`at` in the spans' own time zone (their `zone`, as DailyQuietHours and a calendar's rules
    have), for the reasons a person reads; else as it is."""
    zone = getattr(spans, "zone", None)
    return at.astimezone(zone) if isinstance(zone, zoneinfo.ZoneInfo) else at


def as_wall_time(at: datetime) -> str:
    """07:00 (Europe/Paris) in the span's own zone, else the instant in ISO 8601."""
    if isinstance(at.tzinfo, zoneinfo.ZoneInfo):
        return f"{at:%H:%M} ({at.tzinfo.key})"
    return at.isoformat()


def held_reason(until: datetime) -> str:
    return f"held for quiet hours until {as_wall_time(until)}"


def skipped_reason(until: datetime, *, expires: bool = False) -> str:
    why = ": it would have expired by then" if expires else ""
    return f"{SKIPPED} until {as_wall_time(until)}{why}"[:255]


def folded_reason(winner_pk: Any) -> str:
    return f"{FOLDED_INTO}{winner_pk} (quiet hours)"


def cancelled_for_quiet_hours() -> Q:
    """Rows quiet hours folded or skipped: a domain that moves their entity revives them."""
    return Q(status=Status.CANCELLED) & (
        Q(cancel_reason__startswith=FOLDED_INTO) | Q(cancel_reason__startswith=SKIPPED)
    )


def declared_for(model: type[Any], row: Any) -> ExcludedSpans | str | None:
    """The row's quiet hours as its model declares them: spans, a calendar's name, or None."""
    declared = model.quiet_hours
    if callable(declared) and not isinstance(declared, ExcludedSpans):
        return declared(row)
    return declared


def spans_for(model: type[Any], row: Any) -> ExcludedSpans | None:
    """The row's quiet spans (validate_quiet_hours checked the declaration)."""
    declared = declared_for(model, row)
    return stored_calendar(model, declared) if isinstance(declared, str) else declared


def stored_calendar(model: type[Any], name: str) -> ExcludedSpans:
    """The stored calendar called `name`, its spans in its own time zone; an error naming the
    model and the name when no calendar has it."""
    try:
        return named_calendar(name)
    except CalendarError as exc:
        raise ImproperlyConfigured(
            f"{model.__name__}.quiet_hours names the calendar {name!r}, which cannot be used: "
            f"{exc}. Add a calendar by that name (the admin's Calendars, or POST to the API's "
            "calendars/) or change quiet_hours."
        ) from None


def validate_quiet_hours(model: type[Any]) -> None:
    """Refuse a model's quiet-hours declaration that cannot work, naming the attribute."""
    declared = model.quiet_hours
    if declared is None:
        return
    name = model.__name__
    is_name = isinstance(declared, str) and slug_re.fullmatch(declared) is not None
    if not (is_name or isinstance(declared, ExcludedSpans) or callable(declared)):
        raise ImproperlyConfigured(
            f"{name}.quiet_hours = {declared!r} is not valid: expected {QUIET_HOURS_FORM}."
        )
    if model.quiet_policy not in QuietPolicy.__members__.values():
        accepted = ", ".join(QuietPolicy)
        raise ImproperlyConfigured(
            f"{name}.quiet_policy = {model.quiet_policy!r} is not valid: expected one of "
            f"{accepted}."
        )
    fold_by_attnames(model)


def fold_by_attnames(model: type[Any]) -> tuple[str, ...]:
    """The columns of quiet_fold_by (the fold's entity), checked when the policy is fold."""
    if model.quiet_policy != QuietPolicy.FOLD:
        return ()
    if not model.quiet_fold_by:
        raise ImproperlyConfigured(
            f"{model.__name__}.quiet_fold_by is empty: the fold policy needs the field names "
            'of the entity rows fold into one for, e.g. ("training", "kind").'
        )
    try:
        return tuple(model._meta.get_field(name).attname for name in model.quiet_fold_by)
    except FieldDoesNotExist as exc:
        raise ImproperlyConfigured(
            f"{model.__name__}.quiet_fold_by = {model.quiet_fold_by!r} is not valid: {exc}"
        ) from None


# Django writes a default's path into migrations: the public one, which stays for good.
DailyQuietHours.__module__ = "scheduling.quiet"
