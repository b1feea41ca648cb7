"""sweep(): lock -> claim due rows -> publish -> mark delivered, in bounded batches.

Correctness rests on PostgreSQL, not on the lock: a batch is claimed with
`FOR UPDATE SKIP LOCKED`, published, and marked delivered before its transaction commits.
A second sweeper skips rows the first has locked, and once the first commits those rows no
longer match `status = 'pending'`, so nothing is published twice by racing sweepers. A crash
before the commit leaves the rows pending; they are published again with the same event id.

One sweep, top down: this module takes the slot's lock and requeues unhandled rows
(reconcile.py); loop.py runs batch after batch (and holds, SCHEDULING_SWEEP_HOLD); batch.py is
one batch's transaction, plan.py what it publishes, sql.py the statements that bypass the ORM.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime

from scheduling.delivery import metrics
from scheduling.delivery.locks import SweepLock, sweep_lock
from scheduling.delivery.pauses.services import is_paused
from scheduling.delivery.publishing import Publisher, shared_publisher
from scheduling.delivery.sweep.loop import acquire, deliver, drain_for, holding_until
from scheduling.delivery.sweep.reconcile import requeue_unhandled
from scheduling.delivery.sweep.results import SweepResult
from scheduling.rows.actors import actor, process_actor
from scheduling.rows.conf import scheduling_settings
from scheduling.rows.databases import DEFAULT, database_of
from scheduling.rows.models import ScheduledEvent

log = logging.getLogger("scheduling.sweep")  # the name the docs give


def sweep(
    model: type[ScheduledEvent],
    *,
    now: datetime | None = None,
    slot: int = 0,
    time_budget: float | None = None,
    hold: float = 0.0,
    publisher: Publisher | None = None,
    lock: SweepLock | None = None,
) -> SweepResult:
    """Deliver what is due for `model`. `now` overrides the database clock (tests only);
    `lock` replaces the slot's sweep lock (scheduling.delivery.testing's in-process one).

    With `hold` > 0 the sweep stays on until `hold` (+ HOLD_HANDOVER) seconds after it was
    called, waking at each next due time (by the database's clock) to deliver it then, instead
    of at the next tick; and if another sweep holds this slot's lock it waits for it as long, so
    that with `hold` near the tick interval each tick's sweep takes over as the previous one
    ends.
    """
    with actor(process_actor("sweep")):
        return _sweep(
            model,
            now=now,
            time_budget=time_budget,
            hold=hold,
            publisher=publisher,
            lock=lock or slot_lock(model, slot),
        )


def _sweep(
    model: type[ScheduledEvent],
    *,
    now: datetime | None,
    time_budget: float | None,
    hold: float,
    publisher: Publisher | None,
    lock: SweepLock,
) -> SweepResult:
    conf = scheduling_settings()
    hold_until = holding_until(hold, fixed_clock=now is not None)
    result = SweepResult(model=model._meta.label)
    if is_paused(model):  # read at each sweep's start: a pause reaches every sweeper by a tick
        result.paused = True
        return result
    if not acquire(lock, until=hold_until):
        result.locked_out = True
        return result
    started = time.monotonic()
    publisher = publisher or shared_publisher(conf.publish_timeout)
    drain = drain_for(model, now=now, conf=conf, lock=lock, publisher=publisher)
    drain.chase = hold_until is None  # a holding sweep leaves rows falling due to its next wake
    try:
        if model.get_awaits_handling():
            result.requeued, result.failed = requeue_unhandled(model, conf=conf, now=now)
        deliver(drain, result, time_budget=time_budget or conf.time_budget, hold_until=hold_until)
    finally:
        lock.release()
    metrics.record_sweep(
        model, time.monotonic() - started, redelivered=result.requeued, rate_wait=result.rate_wait
    )
    return result


def slot_lock(model: type[ScheduledEvent], slot: int) -> SweepLock:
    """The lock of one model's sweeper slot: in Redis where the default cache is, else local.
    A model off the default database has its alias in the name (docs/databases.md)."""
    using = database_of(model)
    database = "" if using == DEFAULT else f"{using}:"
    name = f"scheduling:sweep:{database}{model._meta.label_lower}:{slot}"
    return sweep_lock(name, scheduling_settings().lock_ttl)
