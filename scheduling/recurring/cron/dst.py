"""Time zones and the DST policy: a matching wall time becomes an instant; one the clocks skip
fires at the first instant after the jump (gap "shift", the default) or not at all ("skip");
in a repeated hour a plan fires on both passes ("twice") or on the first ("once"), by default
both for an interval-style plan only (see the package docstring)."""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from scheduling.recurring.cron.plan import CronError, Plan
from scheduling.recurring.cron.search import SECOND, next_wall
from scheduling.time import zones


def time_zone(tz: str) -> zoneinfo.ZoneInfo:
    try:
        return zones.time_zone(tz)
    except zones.UnknownTimeZone as exc:
        raise CronError(f"timezone {exc}") from None


def next_cron(
    plan: Plan,
    after: datetime,
    zone: zoneinfo.ZoneInfo,
    *,
    skip_gap: bool = False,
    twice: bool | None = None,
) -> datetime | None:
    """Wall times walk forward; a plan firing twice, asked from the first pass of a repeated
    hour, also has the second pass ahead of it, which wall times alone do not show.

    `skip_gap`: a wall time the clocks skip does not fire; `twice`: a repeated wall time fires
    on both passes (None: only for an interval-style plan)."""
    twice = plan.interval if twice is None else twice
    second_pass = _second_pass_fire(plan, after, zone) if twice else None
    wall = after.astimezone(zone).replace(tzinfo=None)
    while (candidate := next_wall(plan, wall)) is not None:
        skipped = skip_gap and not exists(candidate, zone)
        instant = None if skipped else _instant(candidate, zone, after, twice)
        if instant is not None:
            return instant if second_pass is None else min(instant, second_pass)
        wall = candidate
    return second_pass


def _instant(
    wall: datetime, zone: zoneinfo.ZoneInfo, after: datetime, twice: bool
) -> datetime | None:
    """The instant a matching wall time fires at, if after `after`: its first occurrence; in
    an overlap asked from the second pass, the second occurrence of a plan firing twice."""
    first = to_utc(wall, zone)
    if first > after:
        return first
    second = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    return second if twice and second > after else None


def _second_pass_fire(plan: Plan, after: datetime, zone: zoneinfo.ZoneInfo) -> datetime | None:
    """If `after` is in the first pass of a repeated hour: the plan's first match in the
    second pass, as an instant."""
    length = _overlap_length(after, zone)
    if not length:
        return None
    start = _transition(after, after + length, zone)  # when the clocks go back
    start_wall = start.astimezone(zone).replace(tzinfo=None)
    candidate = next_wall(plan, start_wall - SECOND)
    if candidate is None or candidate >= start_wall + length:
        return None
    return candidate.replace(tzinfo=zone, fold=1).astimezone(UTC)


def _overlap_length(after: datetime, zone: zoneinfo.ZoneInfo) -> timedelta:
    """How far the clocks go back, if `after` is in the first pass of a repeated hour."""
    local = after.astimezone(zone)
    if local.fold:
        return timedelta(0)
    wall = local.replace(tzinfo=None)
    first, second = (wall.replace(tzinfo=zone, fold=fold).astimezone(UTC) for fold in (0, 1))
    return second - first


def _transition(before: datetime, after: datetime, zone: zoneinfo.ZoneInfo) -> datetime:
    """Binary search, to the second, for the first instant with `after`'s UTC offset."""
    offset_after = after.astimezone(zone).utcoffset()
    while after - before > SECOND:
        middle = before + ((after - before) // 2 // SECOND) * SECOND
        if middle.astimezone(zone).utcoffset() == offset_after:
            after = middle
        else:
            before = middle
    return after


def exists(wall: datetime, zone: zoneinfo.ZoneInfo) -> bool:
    """False for a wall time the clocks skip (a spring gap)."""
    instant = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    return instant.astimezone(zone).replace(tzinfo=None) == wall


def to_utc(wall: datetime, zone: zoneinfo.ZoneInfo) -> datetime:
    """The instant of a naive wall time: fold=0 (the first) in an overlap; in a gap, the
    first instant after the jump."""
    if exists(wall, zone):
        return wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    candidates = sorted(wall.replace(tzinfo=zone, fold=fold).astimezone(UTC) for fold in (0, 1))
    return _transition(candidates[0], candidates[1], zone)


class Transition(NamedTuple):
    """A change of a zone's UTC offset: the first instant of the new one."""

    at: datetime
    offset_before: timedelta
    offset_after: timedelta

    @property
    def forward(self) -> bool:
        """Clocks go forward (a gap) rather than back (a repeated hour)."""
        return self.offset_after > self.offset_before


def next_transitions(zone: zoneinfo.ZoneInfo, after: datetime, count: int) -> list[Transition]:
    """The zone's next `count` offset changes after `after`, looked for over a year and a day
    (a zone may have none)."""
    found: list[Transition] = []
    day = timedelta(days=1)
    start = after
    while len(found) < count and start < after + timedelta(days=367):
        before, following = start.astimezone(zone).utcoffset(), (start + day).astimezone(zone)
        if following.utcoffset() != before and before is not None:
            at = _transition(start, start + day, zone)
            after_offset = at.astimezone(zone).utcoffset()  # zero in London's winter: not "none"
            found.append(Transition(at, before, before if after_offset is None else after_offset))
        start += day
    return found
