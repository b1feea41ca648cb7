"""Helpers for a host's own test suite: run what is due in-process, and see what is scheduled.

    from scheduling.delivery.testing import assert_scheduled, run_due, scheduled

`run_due()` is the sweep and the worker in one call, in the test's process, against the test's
database: no broker, no Redis, no worker. It works inside the test's transaction (pytest-django's
`db`, Django's `TestCase`) as well as with real commits (`transaction=True`,
`TransactionTestCase`). See docs/testing.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

from celery import Task, current_app
from django.db import DEFAULT_DB_ALIAS, connections
from django.utils import timezone

from scheduling.delivery import metrics
from scheduling.delivery.locks import LocalSweepLock
from scheduling.delivery.publishing import PreparedMessage
from scheduling.delivery.publishing.memory import MemoryPublisher
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.conf import scheduling_settings
from scheduling.rows.databases import database_of
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.outgoing import OutgoingTask
from scheduling.rows.registry import get_scheduled_model, scheduled_models
from scheduling.rows.states import Status
from scheduling.time.times import iso_utc

__all__ = ["assert_scheduled", "run_due", "scheduled"]

E = TypeVar("E", bound=ScheduledEvent)

# What the sweep sets for its own transaction (SET LOCAL); see transaction_settings_kept().
SWEEP_TRANSACTION_SETTINGS = ("synchronous_commit", "idle_in_transaction_session_timeout")


def run_due(
    *models: type[ScheduledEvent], now: datetime | None = None, raise_errors: bool = False
) -> int:
    """Deliver what is due at `now` and run each event's handler here, as a worker would.

    `models`: the scheduled models to sweep (none given: every one). `now`: the cutoff (default
    `django.utils.timezone.now()`, so time-machine's or freezegun's travel is followed). The
    claim, the publication records, expiry and the handler's `handle_once` are the real ones: a
    handler that raises leaves the row pending with `attempts`, `last_error`, its backoff and
    its history entry, as in production. One pass: an event a handler makes due (a retry, a
    follow-up) waits for the next call. Rows publishing plain JSON are delivered; their
    consumers are not in this process.

    Returns how many events were handled (`handled_at` set). Handler exceptions are recorded
    on the rows and not raised, unless `raise_errors`: then the first one is raised once every
    due event has run. A handler task not registered with Celery raises LookupError.
    """
    cutoff = now if now is not None else timezone.now()
    publisher = MemoryPublisher()
    with metrics.not_recorded():  # the counters live in Redis
        for model in models or scheduled_models():
            with transaction_settings_kept(database_of(model)):
                sweep(model, now=cutoff, publisher=publisher, lock=in_process_lock(model))
        return run_handlers(publisher.published, raise_errors=raise_errors)


def scheduled(model: type[E], **filters: Any) -> list[E]:
    """The model's pending rows matching `filters` (Django lookups), soonest due first."""
    rows = model.objects.filter(status=Status.PENDING, **filters).order_by("due_at", "pk")
    return list(rows)


def assert_scheduled(model: type[E], at: datetime | None = None, **filters: Any) -> E:
    """The one pending row matching `filters` (and due at `at`, if given); AssertionError,
    listing the pending rows that match `filters`, unless there is exactly one."""
    rows = scheduled(model, **filters)
    matching = [row for row in rows if at is None or row.due_at == at]
    if len(matching) != 1:
        wanted = f"due at {iso_utc(at)}" if at is not None else "pending"
        found = ", ".join(f"pk {row.pk} due at {iso_utc(row.due_at)}" for row in rows) or "none"
        raise AssertionError(
            f"expected one {model._meta.label} {wanted} matching {filters!r}, found "
            f"{len(matching)}; pending and matching: {found}"
        )
    return matching[0]


def in_process_lock(model: type[ScheduledEvent]) -> LocalSweepLock:
    """The sweep's lock contract within this process: no Redis, whatever the cache is."""
    return LocalSweepLock(
        f"scheduling:testing:{model._meta.label_lower}", scheduling_settings().lock_ttl
    )


@contextmanager
def transaction_settings_kept(using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """Inside the test's transaction the sweep's SET LOCAL options would last to its end (an
    idle-in-transaction timeout that ends a slow test's session); they are put back."""
    connection = connections[using]
    if connection.vendor != "postgresql" or not connection.in_atomic_block:
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting(%s), current_setting(%s)", SWEEP_TRANSACTION_SETTINGS
        )
        values = cursor.fetchone()
    yield
    assert values is not None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config(%s, %s, true), set_config(%s, %s, true)",
            [
                part
                for pair in zip(SWEEP_TRANSACTION_SETTINGS, values, strict=True)
                for part in pair
            ],
        )


def run_handlers(published: Sequence[PreparedMessage], *, raise_errors: bool) -> int:
    """Each task message's handler, in publication order; how many events ended handled."""
    calls = [
        (handler_task(prepared.message.task_name), prepared.message, prepared.payload)
        for prepared in published
        if isinstance(prepared.message, OutgoingTask)
    ]
    errors: list[BaseException] = []
    for task, message, kwargs in calls:
        outcome = task.apply(kwargs=kwargs, task_id=message.task_id, throw=False)
        if outcome.failed():
            errors.append(outcome.result)
    handled = count_handled(event for _, _, kwargs in calls for event in events_of(kwargs))
    if raise_errors and errors:
        raise errors[0]
    return handled


def events_of(kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of a message: a batch message's, or a single event's."""
    return kwargs["events"] if "events" in kwargs else [kwargs.get("event", {})]


def handler_task(name: str) -> Task:
    app = current_app
    if name not in app.tasks:
        app.loader.import_default_modules()  # the apps' tasks modules, as a worker's start does
    try:
        task: Task = app.tasks[name]
    except KeyError:
        raise LookupError(
            f"no Celery task named {name!r} in this process: define it with "
            f'@shared_task(name="{name}") in a module Celery imports (an app\'s tasks.py, '
            "with app.autodiscover_tasks())"
        ) from None
    return task


def count_handled(events: Iterable[dict[str, Any]]) -> int:
    """How many of these events' rows have `handled_at` set."""
    pks: defaultdict[str, list[Any]] = defaultdict(list)
    for event in events:
        if "model" in event and "pk" in event:
            pks[event["model"]].append(event["pk"])
    models = {label: get_scheduled_model(label) for label in pks}
    return sum(
        model.objects.using(database_of(model))
        .filter(pk__in=pks[label], handled_at__isnull=False)
        .count()
        for label, model in models.items()
    )
