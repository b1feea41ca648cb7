"""Quiet hours: spans of time in which a scheduled model's rows must not be delivered.

Pure: what a span is (`ExcludedSpans`, any object with `excluded_span(at)`, such as
`DailyQuietHours` or a stored calendar), when a row held by one is released, and what a model
declares (`quiet_hours`, `quiet_policy`, `quiet_fold_by`). Applying it to rows as they are
created or moved is scheduling.quiet_rows.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured, ValidationError
from django.db.models import Q

from scheduling.states import Status


@runtime_checkable
class ExcludedSpans(Protocol):
    def excluded_span(self, at: datetime) -> tuple[datetime, datetime] | None:
        """The excluded span [start, end) containing the aware `at`, or None."""
        ...


# A model's `quiet_hours`: the spans, or a function of the row giving them (None: no quiet).
QuietHours = ExcludedSpans | Callable[[Any], ExcludedSpans | None]


class QuietPolicy(StrEnum):
    DELIVER_AT_END = "deliver_at_end"  # due at the span's end
    FOLD = "fold"  # due at the span's end, one per entity (quiet_fold_by): the latest wins
    SKIP = "skip"  # cancelled


# Chained spans (a calendar whose spans touch) are walked this many times at most.
MAX_CHAINED_SPANS = 100

# Cancel reasons, so a domain can bring such rows back when their entity moves.
FOLDED_INTO = "folded into #"
SKIPPED = "skipped for quiet hours"


@lru_cache(maxsize=512)
def time_zone(name: str) -> zoneinfo.ZoneInfo:
    validate_time_zone(name)
    return zoneinfo.ZoneInfo(name)


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def validate_time_zone(name: object) -> None:
    """A model field validator: an IANA time zone name."""
    if not isinstance(name, str) or name not in _zone_names():
        raise ValidationError(
            f"{name!r} is not a known IANA time zone name; expected one such as Europe/Paris "
            "or UTC.",
            code="invalid_time_zone",
        )


@dataclass(frozen=True)
class DailyQuietHours:
    """Every day from `start` to `end`, wall-clock times in `tz`; crosses midnight when
    `end` <= `start` (22:00 to 07:00). A wall time a DST change skips starts or ends the span
    at the jump; one it repeats, at its first pass."""

    start: time = time(22)
    end: time = time(7)
    tz: str = "Europe/Paris"

    def __post_init__(self) -> None:
        if self.start == self.end:
            raise ValueError(f"DailyQuietHours: start and end are both {self.start}: no span.")
        time_zone(self.tz)  # ValidationError naming the accepted form

    def excluded_span(self, at: datetime) -> tuple[datetime, datetime] | None:
        zone = time_zone(self.tz)
        today = at.astimezone(zone).date()
        instant = at.astimezone(UTC)  # two times in one zone compare by wall clock: not here
        for day in (today - timedelta(days=1), today):
            start, end = self.span_of(day, zone)
            if start.astimezone(UTC) <= instant < end.astimezone(UTC):
                return start, end
        return None

    def span_of(self, day: date, zone: zoneinfo.ZoneInfo) -> tuple[datetime, datetime]:
        """The span that starts on `day`."""
        end_day = day + timedelta(days=1) if self.end <= self.start else day
        return wall_instant(day, self.start, zone), wall_instant(end_day, self.end, zone)


def wall_instant(day: date, wall: time, zone: zoneinfo.ZoneInfo) -> datetime:
    """The first instant whose wall clock in `zone` reads `wall` on `day` or later: the first
    pass of a repeated time; the jump itself for a time the clocks skip."""
    naive = datetime.combine(day, wall)
    first = naive.replace(tzinfo=zone)
    if first.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == naive:
        return first
    # In a gap, fold=1 reads the wall time with the offset after the jump: an instant before
    # it; fold=0, with the offset before: an instant after. Bisect to the second between.
    low, high = (naive.replace(tzinfo=zone, fold=f).astimezone(UTC) for f in (1, 0))
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        if middle.astimezone(zone).replace(tzinfo=None) >= naive:
            high = middle
        else:
            low = middle
    return high.astimezone(zone)


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


def spans_for(model: type[Any], row: Any) -> ExcludedSpans | None:
    declared = model.quiet_hours
    if declared is None or isinstance(declared, ExcludedSpans):
        return declared
    spans: ExcludedSpans | None = declared(row)
    return spans


def validate_quiet_hours(model: type[Any]) -> None:
    """Refuse a model's quiet-hours declaration that cannot work, naming the attribute."""
    declared = model.quiet_hours
    if declared is None:
        return
    name = model.__name__
    if not (isinstance(declared, ExcludedSpans) or callable(declared)):
        raise ImproperlyConfigured(
            f"{name}.quiet_hours = {declared!r} is not valid: expected an object with "
            "excluded_span(at) (e.g. DailyQuietHours()), a function of the row returning one "
            "or None, or None."
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
