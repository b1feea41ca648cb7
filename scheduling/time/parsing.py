"""Parsing what people type: ISO 8601 datetimes with an offset, and durations to shift by.

Shared by the admin's forms and the REST API, each error naming the accepted form.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import TypeGuard

from django.utils.dateparse import parse_datetime, parse_duration

from scheduling.time.times import OUT_OF_RANGE, storable_utc

DATETIME_EXAMPLE = "2026-12-24T14:00:00Z"
ACCEPTED_DATETIME = f"an ISO 8601 date and time with an offset or Z, e.g. {DATETIME_EXAMPLE}"
DURATION_EXAMPLE = "P7D, PT2H30M or -PT15M"
# A shift larger than this is a typo, and could move rows out of the storable range.
MAX_SHIFT_YEARS = 100
MAX_SHIFT = timedelta(days=36525)
SHIFT_TOO_LARGE = (
    f"The duration must be at most {MAX_SHIFT_YEARS} years ({MAX_SHIFT.days} days) either way."
)
# parse_duration also takes "7 days, 2:00:00", and its pattern ends in `$`, which lets one
# trailing newline through; the API promises ISO 8601 only, nothing after it.
ISO_DURATION = re.compile(r"[-+]?P(?!\Z)[0-9A-Z.,]*\Z")


def parse_shift(text: str) -> timedelta | None:
    """parse_duration, refusing (ValueError) a duration beyond MAX_SHIFT either way."""
    if text.endswith(("T", "t")):  # "P1DT", "PT": no ISO 8601 (parse_duration reads P1D, zero)
        return None
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
            parsed = parse_datetime(value) if _plain_ascii(value) else None
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


def _plain_ascii(value: object) -> TypeGuard[str]:
    # Django's patterns read \d (any script's digits, e.g. fullwidth ones) and end in `$` (a trailing
    # newline): refuse both before parsing.
    return isinstance(value, str) and value.isascii() and not value.endswith("\n")


def iso_duration(value: timedelta) -> str:
    """PT15M, P1DT2H, PT0.5S: ISO 8601 with only the parts that are not zero."""
    sign = "-" if value < timedelta(0) else ""
    value = abs(value)
    minutes, seconds = divmod(value.seconds, 60)
    hours, minutes = divmod(minutes, 60)
    second_text = f"{seconds}.{value.microseconds:06d}".rstrip("0").rstrip(".")
    parts = [(hours, "H"), (minutes, "M")]
    time = "".join(f"{n}{unit}" for n, unit in parts if n)
    if seconds or value.microseconds:
        time += f"{second_text}S"
    day = f"{value.days}D" if value.days else ""
    return f"{sign}P{day}{'T' + time if time else ''}" if day or time else "PT0S"
