"""One sweep batch: a transaction that claims due rows (FOR UPDATE SKIP LOCKED), publishes
them (what: plan.py) and marks them delivered before it commits. A publish that fails rolls the
batch back: its rows are pending again, with the error recorded on them."""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import F, QuerySet
from django.db.models.functions import Now

from scheduling.delivery import metrics, tracing
from scheduling.delivery.handling.signals import send_after_commit
from scheduling.delivery.publishing import Publisher, PublishError
from scheduling.delivery.sweep import backlog
from scheduling.delivery.sweep.plan import BatchPlan, plan_batch
from scheduling.delivery.sweep.results import Allowance, BatchResult
from scheduling.delivery.sweep.sql import claim_fairly, configure_sweep_transaction, mark_delivered
from scheduling.delivery.sweep.turns import Turns
from scheduling.rows.clock import database_now
from scheduling.rows.conf import SchedulingSettings
from scheduling.rows.databases import DEFAULT, database_of, on_postgresql
from scheduling.rows.fairness import in_turns
from scheduling.rows.history import record
from scheduling.rows.instances import attach_related, build_instances
from scheduling.rows.models import RECORD_FIELDS, ScheduledEvent
from scheduling.rows.states import Status
from scheduling.time.times import require_aware

log = logging.getLogger("scheduling.sweep")  # the name the docs give


class CyclicGcPause:
    """Python's cyclic garbage collector off while a batch runs, on again after the last one.

    A batch allocates some ten thousand objects (instances, events, messages), which sets off
    collections that each walk every live object of the process, though the batch's garbage
    is freed by reference counting as soon as the batch ends; those walks were a large share
    of the sweeper's CPU. A batch lasts tens of milliseconds, and cycles it leaves are
    collected once the collector is back. Counted, so that two connections' overlapping
    batches share one pause, and a process that turned the collector off keeps it off.
    """

    def __init__(self) -> None:
        self.guard = threading.Lock()
        self.batches = 0
        self.was_enabled = False

    @contextmanager
    def paused(self) -> Iterator[None]:
        with self.guard:
            if self.batches == 0:
                self.was_enabled = gc.isenabled()
                gc.disable()
            self.batches += 1
        try:
            yield
        finally:
            with self.guard:
                self.batches -= 1
                if self.batches == 0 and self.was_enabled:
                    gc.enable()


CYCLIC_GC = CyclicGcPause()


def sweep_batch(
    model: type[ScheduledEvent],
    allowance: Allowance | None = None,
    *,
    now: datetime | None,
    publisher: Publisher,
    conf: SchedulingSettings,
    set_aside: set[int] | None = None,
    turns: Turns | None = None,
) -> BatchResult:
    """One transaction: claim up to batch_size due rows, or the rate limit's `allowance` (but
    `set_aside`), publish them, mark them.

    `set_aside`, shared by the connections of one sweep, holds the rows it leaves alone (they
    could not be published); this batch adds its own before committing. `turns`, shared too:
    the ranking a model with a fairness_key claims from (sweep/turns.py).
    """
    rows: list[ScheduledEvent] = []
    plan = BatchPlan()
    allowance = allowance or Allowance(conf.batch_size)
    try:
        with CYCLIC_GC.paused(), transaction.atomic(using=database_of(model)):
            cutoff = begin_batch(conf, now, database_of(model))
            claimed, rows = claim_batch(
                model, cutoff=cutoff, limit=allowance.rows, skip=set_aside, turns=turns
            )
            rows = not_kept_back(model, rows, cutoff)
            if not rows:
                return BatchResult(claimed=claimed)
            with tracing.sending(model, rows):
                plan = plan_batch(rows, cutoff=cutoff, publisher=publisher)
                limited = allowance.rate_limited(claimed)
                result = publish_and_mark(model, plan, publisher, claimed, cutoff, limited)
            if set_aside is not None:
                set_aside.update(result.set_aside)
            return result
    except PublishError as exc:
        return after_publish_error(model, plan, exc, claimed=len(rows))


def begin_batch(conf: SchedulingSettings, now: datetime | None, using: str = DEFAULT) -> datetime:
    """Set the transaction's options and return the claim's cutoff."""
    clock = configure_sweep_transaction(conf, using)
    return require_aware(now, "now") if now is not None else clock or database_now(using)


def claim_batch(
    model: type[ScheduledEvent],
    *,
    cutoff: datetime,
    limit: int,
    skip: set[int] | None,
    turns: Turns | None = None,
) -> tuple[int, list[ScheduledEvent]]:
    """How many rows the claim took, and those of them not set aside."""
    rows = claim_due(model, cutoff=cutoff, limit=limit, skip=frozenset(skip or ()), turns=turns)
    claimed = len(rows)
    if skip is not None:
        # The other connection may have set rows aside and committed between our copy of the
        # set and the claim; it adds them before its commit, so this sees them.
        rows = [row for row in rows if row.pk not in skip]
    return claimed, rows


def not_kept_back(
    model: type[ScheduledEvent], rows: list[ScheduledEvent], cutoff: datetime
) -> list[ScheduledEvent]:
    """The claimed rows but those the model keeps back (ScheduledEvent.keep_back)."""
    kept_back = model.keep_back(rows, now=cutoff) if rows else set()
    return [row for row in rows if row.pk not in kept_back] if kept_back else rows


def publish_and_mark(
    model: type[ScheduledEvent],
    plan: BatchPlan,
    publisher: Publisher,
    claimed: int,
    cutoff: datetime,
    rate_limited: bool = False,
) -> BatchResult:
    refused = publisher.publish(plan.messages())
    plan.set_aside(refused)
    metrics.record_published(
        model, [row for row, _ in plan.publish], cutoff=cutoff, rate_limited=rate_limited
    )
    return mark_batch(model, plan, claimed=claimed, now=cutoff)


def after_publish_error(
    model: type[ScheduledEvent], plan: BatchPlan, exc: PublishError, *, claimed: int
) -> BatchResult:
    # The transaction rolled back: the rows are pending again. Record why, so the admin and
    # `scheduling_status` show it; the attempt does not count against the row.
    log.warning("sweep of %s: %s", model._meta.label, exc)
    # By id: the rows are no longer locked, and one moved since still gets its note.
    ids = [row.pk for row, _ in plan.publish]
    model.objects.filter(pk__in=ids, status=Status.PENDING).update(
        last_error=str(exc)[:2000], updated_at=Now()
    )
    return BatchResult(claimed=claimed, error=str(exc))


def claim_due(
    model: type[ScheduledEvent],
    *,
    cutoff: datetime,
    limit: int,
    skip: Collection[int] = (),
    turns: Turns | None = None,
) -> list[ScheduledEvent]:
    """Up to `limit` due rows, locked: in due order, or (a fairness_key) in turns, from the
    sweep's ranking `turns` if given, else ranked in the claim's own statement."""
    columns = claimed_columns(model)
    using = database_of(model)
    if model.fairness_key and on_postgresql(using):
        claim = turns.claim if turns is not None else partial(claim_fairly, model)
        fairly = claim(columns, cutoff=cutoff, limit=limit, skip=skip)
        events = build_instances(model, columns, fairly, alias=using)
    else:
        claimed = claim_in_due_order(model, columns, cutoff=cutoff, limit=limit, skip=skip)
        events = build_instances(model, columns, claimed, alias=claimed.db)
    if model.related_for_event:
        # One query per relation for the whole batch, instead of a join repeated on every row.
        attach_related(model, events, model.related_for_event, using)
    return events


def claim_in_due_order(
    model: type[ScheduledEvent],
    columns: list[str],
    *,
    cutoff: datetime,
    limit: int,
    skip: Collection[int],
) -> QuerySet[ScheduledEvent, tuple[Any, ...]]:
    # SKIP LOCKED: rows another sweeper holds are left to it. Once it commits they are
    # delivered, and PostgreSQL re-checks the WHERE on the new row version, so we never get them.
    rows = (
        model.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(status=Status.PENDING, due_at__lte=cutoff)
        .order_by("due_at", "pk")
    )
    if skip:
        rows = rows.exclude(pk__in=skip)
    if model.fairness_key:  # other databases (the embedded mode): one process, no lock to skip
        ranked = in_turns(rows.select_for_update(False), model.fairness_key)
        rows = rows.filter(pk__in=list(ranked.values_list("pk", flat=True)[:limit]))
    return rows.values_list(*columns)[:limit]


def claimed_columns(model: type[ScheduledEvent]) -> list[str]:
    """Every column but the delivery records, which the sweep never reads: decoding their
    timestamps was a large share of the claim. `created_at` is read: a row created already due
    is late from its creation (metrics.gauges.late_since), and a deferred column would cost a
    query a row."""
    return [
        f.attname
        for f in model._meta.concrete_fields
        if f.name not in RECORD_FIELDS or f.name == "created_at"
    ]


def mark_batch(
    model: type[ScheduledEvent], plan: BatchPlan, *, claimed: int, now: datetime
) -> BatchResult:
    result = BatchResult(claimed=claimed)
    result.delivered = mark_delivered(model, [row for row, _ in plan.publish])
    result.held = backlog.hold(model, plan.held, now=now, full=plan.full)
    result.expired = model.objects.located(plan.expired).update(
        status=Status.EXPIRED, updated_at=Now()
    )
    if plan.expired:
        record.write(record.expired(plan.expired, now=now))
    delivered = [row for row, _ in plan.publish]
    for row in delivered:
        row.status = Status.DELIVERED
    for row in plan.expired:
        row.status = Status.EXPIRED
    failed = [row for row, error in plan.poisoned if mark_poisoned(model, row, error)]
    result.failed = len(failed)
    result.retrying = len(plan.poisoned) - len(failed)
    result.set_aside.extend(row.pk for row, _ in plan.poisoned)
    model.after_batch(delivered=delivered, expired=plan.expired, failed=failed, now=now)
    return result


def mark_poisoned(model: type[ScheduledEvent], row: ScheduledEvent, error: str) -> bool:
    """Record a row that could not be serialised or published; True once it has `failed`."""
    failed = row.attempts + 1 >= model.get_max_attempts()
    log.error(
        "sweep of %s: %s attempt %d: %s", model._meta.label, row.event_id, row.attempts + 1, error
    )
    row.status = Status.FAILED if failed else Status.PENDING
    model.objects.located([row]).update(
        status=row.status,
        attempts=F("attempts") + 1,
        last_error=error[:2000],
        updated_at=Now(),
    )
    row.attempts, row.last_error = row.attempts + 1, error[:2000]
    record.write([record.publish_failed(row, error, failed=failed)])
    send_after_commit(model, row, row.last_error, will_retry=not failed)
    return failed
