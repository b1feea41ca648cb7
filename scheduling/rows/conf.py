"""The framework's settings: every SCHEDULING_* name, read through one typed object.

Each has a default that works, so a host sets only what it wants to change. Each has a kind
(a count, a duration, a delay...) and, for a number, an upper bound, whose one validation
function serves both the reading below and the system check (scheduling.delivery.checks): a bad
value is refused with ImproperlyConfigured, or reported as scheduling.E001, naming the setting
and the accepted range.
"""

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import Field, dataclass, field, fields
from typing import Any, TypeGuard

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

RATE = re.compile(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)")
MAX_RATE_COUNT = 1_000_000  # a rate's N: a million a second is past any broker we pace
RATE_FORM = (
    "<requests>/<period>, e.g. 60/min, 10/s, 1000/hour or 5000/day, with <requests> from 1 "
    f"to {MAX_RATE_COUNT:,} and <period> s, m, h or d"
)
RATE_LIMITS_FORM = (
    "a dict of model label to rate or None, e.g. {'purchases.ScheduledPurchase': '500/s', "
    "'trainings.ScheduledTrainingNotification': '10/m'}"
)
MODEL_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*")
INTERVAL = re.compile(r"([1-9][0-9]*)([dh])")
PARTITIONS_FORM = (
    'a dict of model label to partition interval "<N>d" or "<N>h", e.g. '
    "{'recurring.ScheduledOccurrence': '1d'}"
)
TASK_PATTERNS_FORM = "a list of task names or patterns, e.g. ['billing.charge', 'reports.*']"

# Upper bounds no real deployment needs to pass: past them a value only breaks arithmetic
# (a date past year 9999, an interval PostgreSQL refuses) or burns CPU (thousands of sweepers).
MINUTE, HOUR, DAY = 60, 3600, 86_400
MAX_SECONDS = 30 * DAY  # the longest wait: a backoff, a handling timeout, a grace
MAX_COUNT = 1_000_000  # the largest count by default; most settings have a bound of their own
MAX_SWEEPER_SLOTS = 64
MAX_BATCH_SIZE = 100_000  # rows one claim locks in one transaction
MAX_ATTEMPTS = 1000
MAX_KEEP_DAYS = 3650  # retention: ten years

Validator = Callable[..., Any]


def refused(name: str, value: object, form: str) -> ImproperlyConfigured:
    return ImproperlyConfigured(f"{name}={value!r} is not valid: expected {form}.")


def a_count(name: str, value: object, most: int = MAX_COUNT) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= most:
        return value
    raise refused(name, value, f"an integer from 1 to {most:,}")


def a_duration(name: str, value: object, most: float = MAX_SECONDS) -> float:
    """Seconds that must pass: a timeout, an interval."""
    if _finite_number(value) and 0 < value <= most:
        return value
    raise refused(name, value, f"a number of seconds > 0 and <= {seconds_text(most)}")


def a_delay(name: str, value: object, most: float = MAX_SECONDS) -> float:
    """Seconds that may be none at all: a backoff, a grace."""
    if _finite_number(value) and 0 <= value <= most:
        return value
    raise refused(name, value, f"a number of seconds from 0 to {seconds_text(most)}")


def seconds_text(seconds: float) -> str:
    """2,592,000 (30 days): the bound as a number, and as what a person reads."""
    number = f"{seconds:,.0f}" if seconds == int(seconds) else f"{seconds:,}"
    for unit, size in (("day", DAY), ("hour", HOUR), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{number} ({count} {unit}{'s' if count > 1 else ''})"
    return number


def a_name(name: str, value: object) -> str:
    if isinstance(value, str) and value.strip():
        return value
    raise refused(name, value, "a non-empty name")


def a_string(name: str, value: object) -> str:
    if isinstance(value, str):
        return value
    raise refused(name, value, "a string")


def a_flag(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    raise refused(name, value, "True or False")


def a_trace_parent(name: str, value: object) -> str:
    if value in ("link", "child"):
        return str(value)
    raise refused(
        name, value, '"link" (a handling\'s span links to the event\'s creation) or "child"'
    )


def a_trace_url(name: str, value: object) -> str:
    if isinstance(value, str) and (not value or "{trace_id}" in value):
        return value
    raise refused(
        name,
        value,
        'a URL with "{trace_id}" in it, e.g. "https://jaeger.example/trace/{trace_id}", or ""',
    )


def a_rate(name: str, value: object) -> str:
    text = value.strip() if isinstance(value, str) else ""
    count = text.partition("/")[0]
    # The length first: int() of thousands of digits is itself slow, and refused past 4,300.
    if RATE.fullmatch(text) and len(count) <= 7 and int(count) <= MAX_RATE_COUNT:
        return text
    raise refused(name, value, RATE_FORM)


def rate_limits(name: str, value: object) -> tuple[tuple[str, str | None], ...]:
    """Model label -> rate, or None for no limit (over the model's `rate_limit`)."""
    if not isinstance(value, dict):
        raise refused(name, value, RATE_LIMITS_FORM)
    limits = []
    for label, rate in value.items():
        if not (isinstance(label, str) and MODEL_LABEL.fullmatch(label)):
            raise refused(name, value, f"{RATE_LIMITS_FORM}; {label!r} is not app_label.ModelName")
        entry = f"{name}[{label!r}]"
        limits.append((label, None if rate is None else a_rate(entry, rate)))
    return tuple(limits)


def rate_limit_of(label: str, own: str | None) -> str | None:
    """A model's rate limit: SCHEDULING_RATE_LIMITS' entry for `label` if it has one (None there
    lifts the model's own), else the model's own `rate_limit`."""
    configured = {each.lower(): rate for each, rate in scheduling_settings().rate_limits}
    if label.lower() in configured:
        return configured[label.lower()]
    return None if own is None else a_rate(f"{label}.rate_limit", own)


def partition_intervals(name: str, value: object) -> tuple[tuple[str, str], ...]:
    """Model label -> the width of its due_at partitions, "<N>d" or "<N>h"."""
    if not isinstance(value, dict):
        raise refused(name, value, PARTITIONS_FORM)
    for label, interval in value.items():
        if not (isinstance(label, str) and MODEL_LABEL.fullmatch(label)):
            raise refused(name, value, f"{PARTITIONS_FORM}; {label!r} is not app_label.ModelName")
        if not (isinstance(interval, str) and INTERVAL.fullmatch(interval.strip())):
            raise refused(f"{name}[{label!r}]", interval, '"<N>d" or "<N>h", e.g. "1d" or "6h"')
    return tuple((label, interval.strip()) for label, interval in value.items())


def task_patterns(name: str, value: object) -> tuple[str, ...]:
    if isinstance(value, list | tuple) and all(isinstance(i, str) and i.strip() for i in value):
        return tuple(item.strip() for item in value)
    raise refused(name, value, TASK_PATTERNS_FORM)


def _finite_number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def setting(default: object, validate: Validator, most: float | None = None) -> Any:
    """A field of SchedulingSettings; `most`, for a number, is its upper bound."""
    return field(default=default, metadata={"validate": validate, "most": most})


@dataclass(frozen=True)
class SchedulingSettings:
    sweep_interval: float = setting(1.0, a_duration, HOUR)  # seconds between beat ticks per model
    batch_size: int = setting(1000, a_count, MAX_BATCH_SIZE)  # rows claimed per transaction
    # Seconds one sweep may keep claiming batches.
    time_budget: float = setting(10.0, a_duration, HOUR)
    lock_ttl: float = setting(30.0, a_duration, HOUR)  # seconds; extended between batches
    # Tries (each publication, and each failed handling) before `failed`.
    max_attempts: int = setting(10, a_count, MAX_ATTEMPTS)
    publish_timeout: float = setting(5.0, a_duration, 300)  # seconds a broker may take to publish
    # Parallel sweepers per model, each with its lock (and a beat entry each tick).
    sweeper_slots: int = setting(1, a_count, MAX_SWEEPER_SLOTS)
    # Seconds a beat-driven sweep stays on to deliver rows as they fall due.
    sweep_hold: float = setting(0.0, a_delay, HOUR)
    # Seconds a holding sweep sleeps at most between two looks for due rows: how late a row
    # inserted already due (or due before the next one known) can be.
    sweep_hold_nap: float = setting(0.2, a_duration, MINUTE)
    queue: str = setting("scheduling", a_name)  # the queue sweep tasks run on
    # Seconds before a failed handling is tried again, doubling; the doubling stops at the max.
    retry_backoff: float = setting(5.0, a_delay, MAX_SECONDS)
    retry_backoff_max: float = setting(600.0, a_delay, MAX_SECONDS)
    # Seconds an event may wait for handling.
    handling_timeout: float = setting(600.0, a_duration, MAX_SECONDS)
    # Days before handled, delivered (no handler) and cancelled rows are purged; failed, expired.
    keep_done_days: int = setting(7, a_count, MAX_KEEP_DAYS)
    keep_failed_days: int = setting(30, a_count, MAX_KEEP_DAYS)
    metrics_token: str = setting("", a_string)  # bearer token for /metrics; empty: staff only
    # /healthz answers 503 when a due row waits longer.
    health_max_lateness: float = setting(60.0, a_duration, MAX_SECONDS)
    # Seconds without a sweep of a model before /healthz, the dashboard and /metrics' readers
    # say "no sweep for N s" (due rows or not).
    health_max_sweep_age: float = setting(60.0, a_duration, DAY)
    bulk_throttle_rate: str = setting("60/min", a_rate)  # bulk requests per user (REST)
    # Creates, edits, deletes and triggers of recurring schedules, and writes of keyed jobs,
    # per user (REST); each budget is its own.
    schedule_write_throttle_rate: str = setting("60/min", a_rate)
    job_write_throttle_rate: str = setting("600/min", a_rate)
    job_list_throttle_rate: str = setting("120/min", a_rate)  # GETs of the keyed jobs' list
    job_max_instants: int = setting(1000, a_count, 100_000)  # instants one keyed job may hold
    # A keyed job's payload, as JSON.
    job_max_payload_bytes: int = setting(64 * 1024, a_count, 16 * 1024 * 1024)
    # Seconds in the past a keyed job's new instant may be (older ones are refused), and what
    # one API user's jobs may hold pending: runs, and bytes (each run's payload and labels).
    job_max_past: float = setting(float(DAY), a_delay, 365 * DAY)
    job_max_pending_runs_per_user: int = setting(100_000, a_count, 100_000_000)
    job_max_pending_bytes_per_user: int = setting(64 * 1024 * 1024, a_count, 1024**4)
    # Plain-JSON queues one API user's jobs with pending runs may send to: with each queue's
    # backlog bound below, what one user can put on the broker is bounded.
    job_max_queues_per_user: int = setting(10, a_count, 10_000)
    # Messages a plain-JSON queue may hold before the sweep stops adding to it (rows wait).
    queue_target_max_backlog: int = setting(10_000, a_count, 10_000_000)
    # Seconds late before a fire time counts as missed.
    recurring_misfire_grace: float = setting(10.0, a_delay, MAX_SECONDS)
    # Model label -> "N/s" or "N/m" (or None: unlimited): how fast the sweep publishes its rows,
    # across every sweeper; over each model's own `rate_limit`. Read at every sweep.
    rate_limits: tuple[tuple[str, str | None], ...] = setting((), rate_limits)
    # Model label -> "<N>d" or "<N>h": its scheduled table is range-partitioned on due_at by
    # that interval (scheduling.rows.partitions), over the model's own `partitioning`.
    partitions: tuple[tuple[str, str], ...] = setting((), partition_intervals)
    # Occurrences one fire_all catch-up may publish, and fire times a schedule may have in an
    # hour of its zone's clock: refused when saved, the catch-up cut at fire time.
    max_catchup_fires: int = setting(10_000, a_count, MAX_COUNT)
    max_fires_per_hour: int = setting(3600, a_count, 3600)
    # Task names (or fnmatch patterns, e.g. "billing.*") a keyed job's task callback may name
    # though this project's Celery app does not register them: other codebases' workers run them.
    external_tasks: tuple[str, ...] = setting((), task_patterns)
    # A handling's `process` span links to each event's creation context ("link"), or is the
    # child of it ("child", for a one-event message); and where the admin's timeline links a
    # history entry's trace id ("" no link; docs/tracing.md).
    trace_parent: str = setting("link", a_trace_parent)
    trace_url: str = setting("", a_trace_url)
    # What SchedulingConfig.ready() does to the host's project; each can be turned off.
    admin_autoregister: bool = setting(True, a_flag)  # default admins on admin.site
    admin_pages: bool = setting(True, a_flag)  # "needs attention" and the dashboard on admin.site
    admin_index_template: bool = setting(
        True, a_flag
    )  # admin.site's index: the pages in its Scheduling app
    quiet_idle_sweeps: bool = setting(True, a_flag)  # an idle sweep tick logs nothing at INFO
    # Workers keep database connections across tasks (CONN_MAX_AGE), not Celery's close per task.
    worker_keeps_connections: bool = setting(True, a_flag)


def scheduling_settings() -> SchedulingSettings:
    """The settings, validated once and kept until a SCHEDULING_* setting changes (tests'
    override_settings): the sweep and every handling read them."""
    global _current
    if _current is None:
        _current = SchedulingSettings(**{f.name: validated(f, n, v) for f, n, v in _configured()})
    return _current


_current: SchedulingSettings | None = None


@receiver(setting_changed)
def _forget_settings(setting: str, **kwargs: Any) -> None:
    global _current
    if setting.startswith("SCHEDULING_"):
        _current = None


def setting_errors() -> list[str]:
    """One line per SCHEDULING_* setting the host set to a value its kind refuses."""
    errors = []
    for each, name, value in _configured():
        try:
            validated(each, name, value)
        except ImproperlyConfigured as refusal:
            errors.append(str(refusal))
    return errors


def validated(each: Field[Any], name: str, value: object) -> Any:
    most = each.metadata["most"]
    bounds = {} if most is None else {"most": most}
    return each.metadata["validate"](name, value, **bounds)


def _configured() -> Iterator[tuple[Field[Any], str, object]]:
    """The settings the host set, as (field, SCHEDULING_ name, value)."""
    for each in fields(SchedulingSettings):
        name = f"SCHEDULING_{each.name.upper()}"
        if hasattr(settings, name):
            yield each, name, getattr(settings, name)
