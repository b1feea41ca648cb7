"""Calendars as pure rules: which instants they exclude, with no database and no clock.

A calendar excludes whole local days (fixed dates, RFC 5545 RRULE dates, weekdays) and daily
windows of wall time (crossing midnight when the end is not after the start), all in its own
time zone; then, in order, includes the excluded time of other calendars (a union) or excludes
it (a difference). Its excluded time is a set of half-open spans [start, end).

Every component says whether it excludes an instant and where its next and previous boundary
lie; a span is found by walking from boundary to boundary while the instant stays excluded.

Wall times and DST: a boundary at a wall time the clocks skip (spring gap) is the instant of
the jump; a window starting at a repeated wall time (autumn overlap) starts on its first pass,
and one ending at a repeated wall time ends on its second, so a window holds every instant whose
wall time is within it. A day is local midnight to local midnight (23 or 25 hours on DST days).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import Protocol
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr

MICROSECOND = timedelta(microseconds=1)
DAY = timedelta(days=1)
# A span longer than this is refused rather than walked on: a calendar that excludes every
# weekday, or composes to exclude everything, has no end to find.
HORIZON = timedelta(days=800)
RECENT_SPANS = 8
INCLUDE = "include"
EXCLUDE = "exclude"


class CalendarError(ValueError):
    """A calendar that cannot be evaluated; the message says why."""


class Excluding(Protocol):
    """What a schedule or a scheduled model needs of a calendar (the Calendar model too)."""

    def excluded_span(self, at: datetime) -> tuple[datetime, datetime] | None: ...

    def next_allowed(self, at: datetime) -> datetime: ...


class Component(Protocol):
    def contains(self, at: datetime) -> bool: ...

    def next_change(self, at: datetime) -> datetime | None: ...

    def previous_change(self, at: datetime) -> datetime | None: ...


def local_to_utc(wall: datetime, zone: ZoneInfo, *, fold: int = 0) -> datetime:
    """The UTC instant of a naive wall time in `zone`: in a spring gap, the jump; in an autumn
    overlap, the first pass (fold=0) or the second (fold=1)."""
    instant = wall.replace(tzinfo=zone, fold=fold).astimezone(UTC)
    if instant.astimezone(zone).replace(tzinfo=None) == wall:
        return instant
    return _jump(wall.replace(tzinfo=zone, fold=1).astimezone(UTC), instant, zone)


def _jump(before: datetime, after: datetime, zone: ZoneInfo) -> datetime:
    """The first instant of the new offset, between `before` and `after` (a gap's two ends)."""
    offset = before.astimezone(zone).utcoffset()
    while after - before > MICROSECOND:
        middle = before + (after - before) / 2
        if middle.astimezone(zone).utcoffset() == offset:
            before = middle
        else:
            after = middle
    return after


@dataclass(frozen=True)
class Days:
    """Whole local days that a predicate on the date picks."""

    zone: ZoneInfo
    picks: Callable[[date], bool]

    def contains(self, at: datetime) -> bool:
        return self.picks(at.astimezone(self.zone).date())

    def next_change(self, at: datetime) -> datetime:
        return self._midnight(at.astimezone(self.zone).date() + DAY)

    def previous_change(self, at: datetime) -> datetime:
        midnight = self._midnight(at.astimezone(self.zone).date())
        return midnight if midnight <= at else self._midnight(midnight.date() - DAY)

    def _midnight(self, day: date) -> datetime:
        return local_to_utc(datetime.combine(day, time()), self.zone)


@dataclass(frozen=True)
class Window:
    """A daily window of wall time, [start, end); it crosses midnight when end <= start."""

    zone: ZoneInfo
    start: time
    end: time

    def contains(self, at: datetime) -> bool:
        return self.span(at) is not None

    def span(self, at: datetime) -> tuple[datetime, datetime] | None:
        """The one day's window holding `at` (UTC), or None. Two days' windows may touch (a
        start and an end in the same spring gap): CalendarRules.excluded_span joins them."""
        return next(((s, e) for s, e in self._around(at) if s <= at < e), None)

    def next_change(self, at: datetime) -> datetime:
        return min(edge for span in self._around(at, days=3) for edge in span if edge > at)

    def previous_change(self, at: datetime) -> datetime:
        return max(edge for span in self._around(at, days=3) for edge in span if edge <= at)

    def _around(self, at: datetime, days: int = 1) -> list[tuple[datetime, datetime]]:
        """The window's spans that begin on the local days around `at`'s."""
        today = at.astimezone(self.zone).date()
        return [_window_on(self, today + offset * DAY) for offset in range(-days, days)]


@lru_cache(maxsize=4096)  # every lookup reads a few days around it: worth keeping
def _window_on(window: Window, day: date) -> tuple[datetime, datetime]:
    """The window that starts on `day`: from the first pass of its start wall time to the
    second pass of its end wall time (a skipped one is the jump)."""
    end_day = day + DAY if window.end <= window.start else day
    return (
        local_to_utc(datetime.combine(day, window.start), window.zone),
        local_to_utc(datetime.combine(end_day, window.end), window.zone, fold=1),
    )


@dataclass(frozen=True)
class CalendarRules:
    """A calendar's own components (their union), then its composition steps in order."""

    components: tuple[Component, ...] = ()
    steps: tuple[tuple[str, CalendarRules], ...] = ()
    # The calendar's own time zone, for people: "held until 07:00 (Europe/Paris)". Its spans
    # are UTC all the same (aware times in a repeated hour compare unequal across zones).
    zone: ZoneInfo | None = None
    # The last spans found: rows created together mostly fall in the same one.
    _recent: list[tuple[datetime, datetime]] = field(
        default_factory=list, compare=False, hash=False, repr=False
    )

    def contains(self, at: datetime) -> bool:
        excluded = any(component.contains(at) for component in self.components)
        for operation, other in self.steps:
            if operation == INCLUDE:
                excluded = excluded or other.contains(at)
            else:
                excluded = excluded and not other.contains(at)
        return excluded

    def next_change(self, at: datetime) -> datetime | None:
        changes = [part.next_change(at) for part in self._parts()]
        return min((change for change in changes if change is not None), default=None)

    def previous_change(self, at: datetime) -> datetime | None:
        changes = [part.previous_change(at) for part in self._parts()]
        return max((change for change in changes if change is not None), default=None)

    def _parts(self) -> list[Component]:
        return [*self.components, *(other for _, other in self.steps)]

    def excluded_span(self, at: datetime) -> tuple[datetime, datetime] | None:
        """The excluded span holding the aware `at`, as UTC [start, end); None if allowed."""
        at = at.astimezone(UTC)
        for start, end in self._recent:
            if start <= at < end:
                return start, end
        if not self.contains(at):
            return None
        span = self._span_start(at), self._span_end(at)
        self._recent[:] = [span, *self._recent[: RECENT_SPANS - 1]]
        return span

    def next_allowed(self, at: datetime) -> datetime:
        """`at` itself if no span holds it, else the end of the span that does."""
        span = self.excluded_span(at)
        return at if span is None else span[1]

    def _span_end(self, at: datetime) -> datetime:
        end = self.next_change(at)
        while end is not None and self.contains(end):
            if end - at > HORIZON:
                raise CalendarError(f"excludes every instant for more than {HORIZON.days} days")
            end = self.next_change(end)
        assert end is not None, "an excluded instant has a component, hence a next change"
        return end

    def _span_start(self, at: datetime) -> datetime:
        start = self.previous_change(at)
        assert start is not None, "an excluded instant has a component, hence a previous change"
        while self.contains(start - MICROSECOND):
            if at - start > HORIZON:
                raise CalendarError(f"excludes every instant for more than {HORIZON.days} days")
            earlier = self.previous_change(start - MICROSECOND)
            assert earlier is not None
            start = earlier
        return start

    def spans(self, after: datetime, count: int) -> list[tuple[datetime, datetime]]:
        """The first `count` excluded spans that end after `after` (the first may hold it),
        within the horizon."""
        found: list[tuple[datetime, datetime]] = []
        until = after + HORIZON  # past the last fixed holiday, no span may ever come
        at: datetime | None = after.astimezone(UTC)
        while at is not None and at < until and len(found) < count:
            span = self.excluded_span(at)
            if span is not None:
                found.append(span)
                at = span[1]
            else:
                at = self.next_change(at)
        return found


def union(calendars: Sequence[CalendarRules]) -> CalendarRules:
    """What any of `calendars` excludes: a schedule's "exclude A, then B"."""
    if len(calendars) == 1:
        return calendars[0]
    return CalendarRules(steps=tuple((INCLUDE, calendar) for calendar in calendars))


@lru_cache(maxsize=1024)
def rule_dates(rule: str, year: int) -> frozenset[date]:
    """The dates an RRULE (already validated) picks in one year."""
    first = datetime(year, 1, 1)
    after_last = datetime(year + 1, 1, 1)
    picked = rrulestr(rule, dtstart=first).between(first, after_last, inc=True)
    return frozenset(moment.date() for moment in picked if moment < after_last)
