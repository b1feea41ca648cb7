"""The wall-time search: the first naive wall time after another that a Plan matches, field
by field from the largest; and @every's elapsed-time steps. Time zones are dst.py's."""

from __future__ import annotations

import calendar
from bisect import bisect_left
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

from scheduling.recurring.cron.plan import Days, Plan

SECOND = timedelta(seconds=1)
# The Gregorian calendar repeats every 400 years: a day rule unmet for that long never is.
SEARCH_YEARS = 400


def next_every(step: timedelta, after: datetime, anchor: datetime) -> datetime | None:
    if after < anchor:
        return anchor.astimezone(UTC)
    try:
        return (anchor + ((after - anchor) // step + 1) * step).astimezone(UTC)
    except OverflowError:  # past what a datetime holds
        return None


def next_wall(plan: Plan, wall: datetime) -> datetime | None:
    """The first matching naive wall time strictly after `wall`, to the second."""
    try:
        return _search(plan, wall.replace(microsecond=0) + SECOND, wall.year + SEARCH_YEARS)
    except (OverflowError, ValueError):  # past datetime's year 9999
        return None


def _search(plan: Plan, t: datetime, until: int) -> datetime | None:
    """Field by field from the largest: a field that does not match moves `t` to its next
    matching value and resets the smaller fields."""
    while t.year <= until:
        if plan.years is not None and t.year not in plan.years:
            year = _following(plan.years, t.year)
            if year is None:
                return None
            t = datetime(year, 1, 1)
        elif t.month not in plan.months:
            month = _following(plan.months, t.month)
            t = datetime(t.year, month, 1) if month is not None else datetime(t.year + 1, 1, 1)
        elif t.day not in (days := _days(plan.dom, plan.dow, plan.days_or, t.year, t.month)):
            day = _following(days, t.day)
            t = datetime(t.year, t.month, day) if day is not None else _first_month_day(t)
        elif t.hour not in plan.hours:
            hour = _following(plan.hours, t.hour)
            t = t.replace(hour=hour, minute=0, second=0) if hour is not None else _next_day(t)
        elif t.minute not in plan.minutes:
            minute = _following(plan.minutes, t.minute)
            t = (
                t.replace(minute=minute, second=0)
                if minute is not None
                else t.replace(minute=0, second=0) + timedelta(hours=1)
            )
        elif t.second not in plan.seconds:
            second = _following(plan.seconds, t.second)
            t = (
                t.replace(second=second)
                if second is not None
                else t.replace(second=0) + timedelta(minutes=1)
            )
        else:
            return t
    return None


def _following(values: tuple[int, ...], current: int) -> int | None:
    """The first value above `current`, or None."""
    index = bisect_left(values, current + 1)
    return values[index] if index < len(values) else None


def _next_day(t: datetime) -> datetime:
    return datetime(t.year, t.month, t.day) + timedelta(days=1)


def _first_month_day(t: datetime) -> datetime:
    """The first day of the month after t's."""
    return datetime(t.year + t.month // 12, t.month % 12 + 1, 1)


@lru_cache(maxsize=4096)
def _days(
    dom: Days | None, dow: Days | None, days_or: bool, year: int, month: int
) -> tuple[int, ...]:
    """The days of one month that match the day-of-month and day-of-week fields."""
    last = calendar.monthrange(year, month)[1]
    all_days = frozenset(range(1, last + 1))
    by_dom = all_days if dom is None else _month_days(dom, year, month, last)
    by_dow = all_days if dow is None else _week_days(dow, year, month, last)
    days = by_dom | by_dow if days_or else by_dom & by_dow
    return tuple(sorted(days))


def _month_days(dom: Days, year: int, month: int, last: int) -> frozenset[int]:
    days = {day for day in dom.values if day <= last}
    for kind, number, _ in dom.rules:
        if kind == "W" and number <= last:  # 31W does not fire in 30-day months (Quartz)
            days.add(_nearest_weekday(year, month, number, last))
        elif kind in ("L", "LW") and last - number >= 1:
            target = last - number
            days.add(_nearest_weekday(year, month, target, last) if kind == "LW" else target)
    return frozenset(days)


def _week_days(dow: Days, year: int, month: int, last: int) -> frozenset[int]:
    first_weekday = (date(year, month, 1).weekday() + 1) % 7  # 0 = SUN
    days = set()
    for day in range(1, last + 1):
        weekday = (first_weekday + day - 1) % 7
        if weekday in dow.values or any(
            rule_day == weekday
            and ((kind == "L" and day + 7 > last) or (kind == "#" and (day + 6) // 7 == nth))
            for kind, rule_day, nth in dow.rules
        ):
            days.add(day)
    return frozenset(days)


def _nearest_weekday(year: int, month: int, day: int, last: int) -> int:
    """Quartz's nW: the weekday nearest to `day`, never leaving the month."""
    weekday = date(year, month, day).weekday()  # Monday = 0
    if weekday == 5:  # Saturday: Friday, unless that is in the previous month
        return day - 1 if day > 1 else day + 2
    if weekday == 6:  # Sunday: Monday, unless that is in the next month
        return day + 1 if day < last else day - 2
    return day
