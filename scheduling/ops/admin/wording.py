"""Durations and lateness the way a person reads them on an admin page."""

from __future__ import annotations

from datetime import timedelta

ON_TIME_SECONDS = 0.5  # below this a try reads "on time": the sweep's own lag, not a delay


def short_duration(value: timedelta) -> str:
    """`0.4 s`, `40 s`, `12 min`, `5 h 3 min`, `3 days 2 h`; negative durations read as 0."""
    seconds = max(value.total_seconds(), 0.0)
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    minutes = int(seconds // 60)
    if minutes < 120:
        return f"{minutes} min"
    hours = minutes // 60
    if hours < 48:
        return f"{hours} h {minutes % 60} min" if minutes % 60 else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} days {hours} h" if hours else f"{days} days"


def lateness(verb: str, late_by_seconds: float) -> str:
    """`sent 3 days late`, `sent 2 min early` or `sent on time`, for verb `sent`."""
    if abs(late_by_seconds) < ON_TIME_SECONDS:
        return f"{verb} on time"
    duration = short_duration(timedelta(seconds=abs(late_by_seconds)))
    return f"{verb} {duration} {'late' if late_by_seconds > 0 else 'early'}"
