"""The framework's settings: every SCHEDULING_* name, read through one typed object.

Each has a default that works, so a host sets only what it wants to change; a bad value is
refused with ImproperlyConfigured naming the setting and the accepted form.
"""

import math
import re
from dataclasses import dataclass, fields
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

RATE = re.compile(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)")
RATE_FORM = "<requests>/<period>, e.g. 60/min, 10/s, 1000/hour or 5000/day"
TASK_PATTERNS_FORM = "a list of task names or patterns, e.g. ['billing.charge', 'reports.*']"


@dataclass(frozen=True)
class SchedulingSettings:
    sweep_interval: float = 1.0  # seconds between beat ticks per model
    batch_size: int = 1000  # rows claimed per transaction
    time_budget: float = 10.0  # seconds one sweep may keep claiming batches
    lock_ttl: float = 30.0  # seconds; extended between batches
    max_attempts: int = 10  # tries (each publication, and each failed handling) before `failed`
    publish_timeout: float = 5.0  # seconds a broker may take before a publish fails
    sweeper_slots: int = 1  # parallel sweepers per model, each with its own lock
    sweep_hold: float = 0.0  # seconds a beat-driven sweep stays on to deliver rows as they fall due
    queue: str = "scheduling"  # the queue sweep tasks run on
    retry_backoff: float = 5.0  # seconds before a failed handling is tried again, doubling
    retry_backoff_max: float = 600.0  # the doubling stops here
    handling_timeout: float = 600.0  # seconds a published event may wait to be handled
    keep_done_days: int = 7  # handled, delivered (no handler) and cancelled rows are purged after
    keep_failed_days: int = 30  # failed and expired rows are purged after
    metrics_token: str = ""  # bearer token for /metrics; empty: staff session only
    health_max_lateness: float = 60.0  # /healthz answers 503 when a due row waits longer
    bulk_throttle_rate: str = "60/min"  # bulk reschedule/cancel requests per user (REST)
    job_max_instants: int = 1000  # instants one keyed job may hold
    job_max_payload_bytes: int = 64 * 1024  # a keyed job's payload, as compact JSON
    recurring_misfire_grace: float = 10.0  # seconds late before a fire time counts as missed
    # Task names (or fnmatch patterns, e.g. "billing.*") a keyed job's task callback may name
    # though this project's Celery app does not register them: other codebases' workers run them.
    external_tasks: tuple[str, ...] = ()
    # What SchedulingConfig.ready() does to the host's project; each can be turned off.
    admin_autoregister: bool = True  # a default admin on admin.site for unregistered models
    admin_pages: bool = True  # "needs attention" and the dashboard on admin.site
    admin_index_template: bool = True  # admin.site's index gets the "Scheduling" box
    quiet_idle_sweeps: bool = True  # an idle sweep tick logs nothing at INFO


def scheduling_settings() -> SchedulingSettings:
    values: dict[str, Any] = {}
    for field in fields(SchedulingSettings):
        name = f"SCHEDULING_{field.name.upper()}"
        if hasattr(settings, name):
            values[field.name] = _checked(name, getattr(settings, name), field.type)
    return SchedulingSettings(**values)


def _checked(name: str, value: object, kind: object) -> object:
    if name == "SCHEDULING_EXTERNAL_TASKS":
        return _task_patterns(name, value)
    if kind in (int, "int") and (
        not isinstance(value, int) or isinstance(value, bool) or value < 1
    ):
        raise ImproperlyConfigured(f"{name}={value!r} is not valid: expected an integer >= 1.")
    if kind in (float, "float") and (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ImproperlyConfigured(f"{name}={value!r} is not valid: expected seconds >= 0.")
    if name.endswith("_RATE"):
        if not isinstance(value, str) or not RATE.fullmatch(value.strip()):
            raise ImproperlyConfigured(f"{name}={value!r} is not valid: expected {RATE_FORM}.")
        return value.strip()
    if name.endswith("_TOKEN"):
        if not isinstance(value, str):
            raise ImproperlyConfigured(f"{name}={value!r} is not valid: expected a string.")
        return value
    if kind in (str, "str") and (not isinstance(value, str) or not value):
        raise ImproperlyConfigured(f"{name}={value!r} is not valid: expected a non-empty name.")
    return value


def _task_patterns(name: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(
        isinstance(item, str) and item.strip() for item in value
    ):
        raise ImproperlyConfigured(f"{name}={value!r} is not valid: expected {TASK_PATTERNS_FORM}.")
    return tuple(item.strip() for item in value)
