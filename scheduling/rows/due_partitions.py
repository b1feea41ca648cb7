"""What a model asks for: partitions of `interval` on due_at, `premake` of them kept ahead.

Imports nothing of the framework's models, so that scheduling.rows.models can name DuePartitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from scheduling.rows.conf import INTERVAL, scheduling_settings

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
DEFAULT_PREMAKE = 14


@dataclass(frozen=True)
class DuePartitions:
    """`partitioning = DuePartitions(interval=timedelta(days=1), premake=14)` on a model."""

    interval: timedelta = timedelta(days=1)
    premake: int = DEFAULT_PREMAKE

    def __post_init__(self) -> None:
        if self.interval < HOUR or self.interval % HOUR:
            raise ImproperlyConfigured(
                f"DuePartitions(interval={self.interval!r}) is not valid: expected a whole "
                "number of hours, at least one (e.g. timedelta(days=1))."
            )
        if not isinstance(self.premake, int) or self.premake < 1:
            raise ImproperlyConfigured(
                f"DuePartitions(premake={self.premake!r}) is not valid: expected an integer >= 1."
            )


def parse_interval(text: str) -> timedelta:
    """ "1d" -> one day, "6h" -> six hours (the form SCHEDULING_PARTITIONS takes)."""
    match = INTERVAL.fullmatch(text.strip())
    if match is None:
        raise ImproperlyConfigured(f'interval={text!r} is not valid: expected "<N>d" or "<N>h".')
    count, unit = int(match[1]), match[2]
    return timedelta(days=count) if unit == "d" else timedelta(hours=count)


def as_interval(value: timedelta | str) -> timedelta:
    return value if isinstance(value, timedelta) else parse_interval(value)


def partitioning_of(model: Any) -> DuePartitions | None:
    """The model's partitioning: SCHEDULING_PARTITIONS' entry for it, else its own attribute."""
    own: DuePartitions | None = getattr(model, "partitioning", None)
    configured = {label.lower(): each for label, each in scheduling_settings().partitions}
    interval = configured.get(model._meta.label_lower)
    if interval is None:
        return own
    premake = own.premake if own is not None else DEFAULT_PREMAKE
    return DuePartitions(interval=parse_interval(interval), premake=premake)


def align_down(at: datetime, interval: timedelta) -> datetime:
    """The start of the interval `at` falls in, counted from the Unix epoch (UTC midnights)."""
    return EPOCH + ((at - EPOCH) // interval) * interval


def partition_name(table: str, lower: datetime, interval: timedelta) -> str:
    stamp = "%Y%m%d" if interval % timedelta(days=1) == timedelta(0) else "%Y%m%d%H"
    return f"{table}_p{lower.astimezone(UTC).strftime(stamp)}"
