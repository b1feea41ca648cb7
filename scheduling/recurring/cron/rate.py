"""How often a plan fires, counted from its fields: no fire time is enumerated, so a plan that
fires every second over a year costs the same as a daily one.

`fires_per_hour` is exact for an hour of the zone's clock in which the plan fires at all.
`most_fires_within` bounds the fire times in any span of a given length: per minute, per
hour and per day of the fields, whichever is smallest (days of the month and week, months and
years only lower the real count). A DST change can add one fire (the wall times a spring gap
skips fire once, at its end); the fire-time cap (scheduling.recurring.timeline) is exact.
"""

from __future__ import annotations

import math
from datetime import timedelta

from scheduling.recurring.cron.plan import Plan

MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
SECOND = timedelta(seconds=1)


def fires_per_hour(plan: Plan) -> int:
    """The most fire times in one hour."""
    if plan.every is not None:
        return math.ceil(HOUR / plan.every)
    if plan.at is not None:
        return 1
    return len(plan.seconds) * len(plan.minutes)


def most_fires_within(plan: Plan, span: timedelta) -> int:
    """At most how many fire times any closed span of this length holds."""
    if plan.every is not None:
        return span // plan.every + 1
    if plan.at is not None:
        return 1
    per_minute = len(plan.seconds)
    per_hour = per_minute * len(plan.minutes)
    per_day = per_hour * len(plan.hours)
    # A closed span touches at most ceil(span / period) + 1 periods.
    return min(
        fires * (math.ceil(span / period) + 1)
        for fires, period in ((per_minute, MINUTE), (per_hour, HOUR), (per_day, DAY))
    )


def longest_span_within(plan: Plan, limit: int, longest: timedelta) -> timedelta:
    """The longest span, up to `longest` and to the second, that holds at most `limit` fire
    times by most_fires_within; zero if even an instant's may hold more."""
    if most_fires_within(plan, longest) <= limit:
        return longest
    low, high = 0, int(longest / SECOND)  # most_fires_within(low) <= limit < at high
    if most_fires_within(plan, timedelta(0)) > limit:
        return timedelta(0)
    while high - low > 1:
        middle = (low + high) // 2
        if most_fires_within(plan, middle * SECOND) <= limit:
            low = middle
        else:
            high = middle
    return low * SECOND
