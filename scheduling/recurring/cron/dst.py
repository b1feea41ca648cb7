"""Time zones and the DST policy: a matching wall time becomes an instant, a skipped one fires
at the first instant after the jump, and in a repeated hour an interval-style plan fires on
both passes (see the package docstring)."""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from scheduling.recurring.cron.plan import CronError, Plan
from scheduling.recurring.cron.search import SECOND, next_wall


@lru_cache(maxsize=512)
def time_zone(tz: str) -> zoneinfo.ZoneInfo:
    if not isinstance(tz, str) or tz not in _zone_names():
        raise CronError(
            f"timezone {tz!r} is not a known IANA time zone name, e.g. Europe/Paris or UTC"
        )
    return zoneinfo.ZoneInfo(tz)


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def next_cron(plan: Plan, after: datetime, zone: zoneinfo.ZoneInfo) -> datetime | None:
    """Wall times walk forward; an interval-style plan asked from the first pass of a repeated
    hour also has the second pass ahead of it, which wall times alone do not show."""
    second_pass = _second_pass_fire(plan, after, zone) if plan.interval else None
    wall = after.astimezone(zone).replace(tzinfo=None)
    while (candidate := next_wall(plan, wall)) is not None:
        instant = _instant(candidate, zone, after, plan.interval)
        if instant is not None:
            return instant if second_pass is None else min(instant, second_pass)
        wall = candidate
    return second_pass


def _instant(
    wall: datetime, zone: zoneinfo.ZoneInfo, after: datetime, interval: bool
) -> datetime | None:
    """The instant a matching wall time fires at, if after `after`: its first occurrence; in
    an overlap asked from the second pass, an interval-style plan's second occurrence."""
    first = to_utc(wall, zone)
    if first > after:
        return first
    second = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    return second if interval and second > after else None


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


def to_utc(wall: datetime, zone: zoneinfo.ZoneInfo) -> datetime:
    """The instant of a naive wall time: fold=0 (the first) in an overlap; in a gap, the
    first instant after the jump."""
    aware = wall.replace(tzinfo=zone, fold=0)
    instant = aware.astimezone(UTC)
    if instant.astimezone(zone).replace(tzinfo=None) == wall:
        return instant
    candidates = sorted(wall.replace(tzinfo=zone, fold=fold).astimezone(UTC) for fold in (0, 1))
    return _transition(candidates[0], candidates[1], zone)
