"""Due times a scheduled table can store: aware, in UTC, within the years it can give back."""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import models


def require_aware(value: object, field: str) -> datetime:
    """Refuse anything but an aware datetime, naming the field and the accepted form."""
    if not isinstance(value, datetime):
        raise TypeError(
            f"{field} must be a timezone-aware datetime, e.g. 2026-12-24T14:00:00+00:00; "
            f"got {type(value).__name__}"
        )
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"{field} must be timezone-aware (with an offset, e.g. 2026-12-24T14:00:00+00:00); "
            f"got the naive datetime {value.isoformat()}"
        )
    return value


MIN_YEAR, MAX_YEAR = 1970, 9000
OUT_OF_RANGE = (
    f"This date and time is out of range: enter one in the years {MIN_YEAR} to {MAX_YEAR}"
)
STORABLE_FROM = datetime(MIN_YEAR, 1, 1, tzinfo=UTC)
STORABLE_UNTIL = datetime(MAX_YEAR + 1, 1, 1, tzinfo=UTC)


def storable_utc(value: datetime) -> datetime:
    """An aware datetime in UTC, refused (ValueError) unless its year is MIN_YEAR..MAX_YEAR.

    PostgreSQL refuses offsets of 16 hours or more and psycopg cannot read years BC back, so
    a value is checked before any service writes it; every scheduled table also refuses a
    due_at outside the range (a CHECK constraint), which is what bounds bulk shifts.
    """
    try:
        utc = value.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:30+01:00 is in year 0
        raise ValueError(f"{OUT_OF_RANGE}.") from None
    if not MIN_YEAR <= utc.year <= MAX_YEAR:
        raise ValueError(f"{OUT_OF_RANGE}.")
    return utc


def iso_utc(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def due_range_constraint_name(model: type[models.Model]) -> str:
    return f"{model._meta.db_table}_due_at_storable"[:63]
