"""Parsing what people type: ISO 8601 datetimes with an offset, and durations to shift by.

Shared by the admin's forms and the REST API, each error naming the accepted form.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from django.utils.dateparse import parse_datetime, parse_duration

from scheduling.models import OUT_OF_RANGE, storable_utc

DATETIME_EXAMPLE = "2026-12-24T14:00:00Z"
ACCEPTED_DATETIME = f"an ISO 8601 date and time with an offset or Z, e.g. {DATETIME_EXAMPLE}"
DURATION_EXAMPLE = "P7D, PT2H30M or -PT15M"
# A shift larger than this is a typo, and could move rows out of the storable range.
MAX_SHIFT_YEARS = 100
MAX_SHIFT = timedelta(days=36525)
SHIFT_TOO_LARGE = (
    f"The duration must be at most {MAX_SHIFT_YEARS} years ({MAX_SHIFT.days} days) either way."
)
# parse_duration also takes "7 days, 2:00:00"; the API promises ISO 8601 only.
ISO_DURATION = re.compile(r"^[-+]?P(?!$)")


def parse_shift(text: str) -> timedelta | None:
    """parse_duration, refusing (ValueError) a duration beyond MAX_SHIFT either way."""
    try:
        value = parse_duration(text)
    except OverflowError:  # more days than a timedelta holds
        raise ValueError(SHIFT_TOO_LARGE) from None
    if value is not None and abs(value) > MAX_SHIFT:
        raise ValueError(SHIFT_TOO_LARGE)
    return value


def parse_aware_datetime(value: object) -> datetime:
    """Parse an ISO 8601 datetime with an offset; ValueError names the accepted form."""
    if isinstance(value, datetime):
        parsed: datetime | None = value
    else:
        try:
            parsed = parse_datetime(value) if isinstance(value, str) else None
        except ValueError:  # well formed but impossible, e.g. month 13
            parsed = None
    if parsed is None:
        raise ValueError(f"Enter {ACCEPTED_DATETIME}.")
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ValueError(f"This date and time has no offset; enter {ACCEPTED_DATETIME}.")
    try:
        return storable_utc(parsed)
    except ValueError:
        raise ValueError(f"{OUT_OF_RANGE}, as {ACCEPTED_DATETIME}.") from None
