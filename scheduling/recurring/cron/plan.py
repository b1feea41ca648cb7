"""A parsed cron expression: what parsing.py produces and search.py and dst.py read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta


class CronError(ValueError):
    """An expression or time zone that cannot be used; the message names the field and why."""


@dataclass(frozen=True)
class Days:
    """A day-of-month or day-of-week field: plain values plus L / W / # rules.

    Day-of-week values are 0 (SUN) to 6. Rules: ("L", n) last day - n, ("LW", n) the weekday
    nearest to it, ("W", d) the weekday nearest to day d; ("L", w) the last w-day of the month,
    ("#", w, k) its k-th w-day."""

    values: frozenset[int]
    rules: tuple[tuple[str, int, int], ...] = ()


@dataclass(frozen=True)
class Plan:
    """A parsed expression: sorted values per field, the day fields, or a macro's instant."""

    seconds: tuple[int, ...] = (0,)
    minutes: tuple[int, ...] = ()
    hours: tuple[int, ...] = ()
    months: tuple[int, ...] = ()
    years: tuple[int, ...] | None = None
    dom: Days | None = None  # None: every day
    dow: Days | None = None
    days_or: bool = False  # Vixie: both restricted and neither starts with "*"
    interval: bool = False  # minute or hour field starts with "*": the DST overlap rule
    every: timedelta | None = None
    at: datetime | None = None
