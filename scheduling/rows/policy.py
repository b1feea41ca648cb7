"""A scheduled model's retry policy: its own class attributes where it sets them, else the
SCHEDULING_* settings. A bad value stops the process that imports the model, naming it."""

from __future__ import annotations

import math
from typing import Any, TypeVar

from django.core.exceptions import ImproperlyConfigured

from scheduling.rows.conf import scheduling_settings

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
            form = "an integer >= 1" if whole else "seconds >= 0"
            raise ImproperlyConfigured(
                f"{model.__name__}.{name} = {value!r} is not valid: expected {form}, or None "
                f"for SCHEDULING_{name.upper()}."
            )


def accepted(value: object, *, whole: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if whole:
        return isinstance(value, int) and value >= 1
    return math.isfinite(value) and value >= 0


def validate_batch_size(model: type[Any]) -> None:
    size = getattr(model, "handler_batch_size", 0)
    if isinstance(size, int) and not isinstance(size, bool) and 0 <= size <= MAX_HANDLER_BATCH_SIZE:
        return
    raise ImproperlyConfigured(
        f"{model.__name__}.handler_batch_size = {size!r} is not valid: expected an integer from "
        f"1 to {MAX_HANDLER_BATCH_SIZE} (events a handler takes at once), or 0 for one at a time."
    )
