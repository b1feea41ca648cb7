"""A scheduled model's retry policy: its own class attributes where it sets them, else the
SCHEDULING_* settings. A bad value (out of the settings' own bounds) stops the process that
imports the model, naming it."""

from __future__ import annotations

import logging
import math
from typing import Any, TypeVar

from django.core.exceptions import ImproperlyConfigured

from scheduling.rows.conf import (
    MAX_ATTEMPTS,
    MAX_SECONDS,
    SchedulingSettings,
    scheduling_settings,
    seconds_text,
)

log = logging.getLogger("scheduling")

Number = TypeVar("Number", int, float)

# The policy's class attributes, each with its setting's name.
POLICY_ATTRIBUTES = ("max_attempts", "retry_backoff", "retry_backoff_max", "handling_timeout")


def own_or_setting(value: Number | None, name: str) -> Number:
    """The model's own value, or None's meaning: the SCHEDULING_<NAME> setting."""
    if value is not None:
        return value
    setting: Number = getattr(scheduling_settings(), name)
    return setting


# Events one batch message may carry: one message's body stays within a few megabytes.
MAX_HANDLER_BATCH_SIZE = 10_000


def validate_policy(model: type[Any]) -> None:
    validate_batch_size(model)
    for name in POLICY_ATTRIBUTES:
        value = getattr(model, name)
        if value is None:
            continue
        whole = name == "max_attempts"
        if not accepted(value, whole=whole):
            form = (
                f"an integer from 1 to {MAX_ATTEMPTS:,}"
                if whole
                else f"seconds from 0 to {seconds_text(MAX_SECONDS)}"
            )
            raise ImproperlyConfigured(
                f"{model.__name__}.{name} = {value!r} is not valid: expected {form}, or None "
                f"for SCHEDULING_{name.upper()}."
            )


def accepted(value: object, *, whole: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if whole:
        return isinstance(value, int) and 1 <= value <= MAX_ATTEMPTS
    return math.isfinite(value) and 0 <= value <= MAX_SECONDS


def backoff_ceiling(attempts: int, model: Any) -> float:
    """The longest wait, in seconds, before a failed handling is tried again: the model's
    backoff doubling with each try after the first, stopped at its maximum and at MAX_SECONDS.

    Never raises, so the failure it serves is always recorded: a value past the bounds (set
    after the start checks, e.g. on the class) is clamped, and a policy that cannot be read
    waits SCHEDULING_RETRY_BACKOFF_MAX's default."""
    try:
        base, most = float(model.get_retry_backoff()), float(model.get_retry_backoff_max())
    except Exception:
        log.exception("the retry policy of %s cannot be read", getattr(model, "__name__", model))
        base = most = SchedulingSettings.retry_backoff_max
    doublings = min(max(attempts - 1, 0), 64)
    return min(_within_bounds(base * 2.0**doublings), _within_bounds(most))


def longest_backoff(model: Any) -> float:
    """The model's maximum backoff, in seconds, within the bounds; never raises."""
    try:
        return _within_bounds(float(model.get_retry_backoff_max()))
    except Exception:
        log.exception("the retry policy of %s cannot be read", getattr(model, "__name__", model))
        return float(SchedulingSettings.retry_backoff_max)


def _within_bounds(seconds: float) -> float:
    # A float past any bound (1e308 * 2**64 is inf, not an error) or nan waits the longest.
    return MAX_SECONDS if math.isnan(seconds) else min(max(seconds, 0.0), MAX_SECONDS)


def validate_batch_size(model: type[Any]) -> None:
    size = getattr(model, "handler_batch_size", 0)
    if isinstance(size, int) and not isinstance(size, bool) and 0 <= size <= MAX_HANDLER_BATCH_SIZE:
        return
    raise ImproperlyConfigured(
        f"{model.__name__}.handler_batch_size = {size!r} is not valid: expected an integer from "
        f"1 to {MAX_HANDLER_BATCH_SIZE} (events a handler takes at once), or 0 for one at a time."
    )
