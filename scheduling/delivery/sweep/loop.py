"""Draining what is due: batch after batch within the sweep's time budget, and behind a backlog
on a second connection as well, so that one batch's claim overlaps the other's publishing.

Holding sweeps (SCHEDULING_SWEEP_HOLD): a sweep that stays on after draining, waking at each
next due time (by the database's clock) to deliver it then instead of at the next tick; and
that waits for its slot's lock rather than give up, so that each tick's sweep takes over as the
previous one ends.

Each wake costs a probe for the next due time and, when something is due, one batch: at most
1/HOLD_NAP_MIN wakes a second while events fall due, 1/SCHEDULING_SWEEP_HOLD_NAP when nothing is
due soon; a due row waits up to HOLD_NAP_MIN for its wake, a row inserted already due up to
SCHEDULING_SWEEP_HOLD_NAP. A wake costs far more than its probe on a machine that idles between
wakes (about a millisecond of CPU where the probe alone takes 50 µs): fewer, longer naps are
the cheaper hold where every row is known ahead, as a cron's are.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from functools import partial

from django.db import connections

from scheduling.delivery.locks import SweepLock
from scheduling.delivery.publishing import Publisher
from scheduling.delivery.publishing.redis_batch import RedisBatchPublisher
from scheduling.delivery.ratelimit import Budget, budget_for
from scheduling.delivery.sweep.batch import sweep_batch
from scheduling.delivery.sweep.results import Allowance, BatchResult, SweepResult
from scheduling.delivery.sweep.sql import has_due_rows, seconds_until_next_due
from scheduling.delivery.sweep.turns import Turns
from scheduling.rows.conf import SchedulingSettings
from scheduling.rows.databases import database_of
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.partitions import retried_on_moved_rows

HOLD_NAP_MIN = 0.01
HOLD_NAP_MAX = 0.2  # SCHEDULING_SWEEP_HOLD_NAP's default


class Next(Enum):
    """What a sweep does after a batch."""

    CLAIM_AGAIN = "claim again"  # the batch was full, or more rows are due already
    DRAINED = "drained"  # nothing else is due
    STOPPED = "stopped"  # an error, the time budget, the lost lock or the other connection


@dataclass
class Drain:
    model: type[ScheduledEvent]
    now: datetime | None
    batch_size: int
    lock: SweepLock
    batch: Callable[[Allowance], BatchResult]  # one transaction: claim, publish, mark
    overlap: bool  # a second connection claims and publishes too behind a full batch
    budget: Budget | None = None  # the model's rate limit; None: unlimited
    guard: threading.Lock = field(default_factory=threading.Lock)  # the result's sums
    # After a short batch, claim again at once if more rows are due by then. A holding sweep
    # leaves them to its next wake instead, a few milliseconds later, rather than spinning.
    chase: bool = True
    longest_nap: float = HOLD_NAP_MAX  # SCHEDULING_SWEEP_HOLD_NAP

    def drain_due(self, result: SweepResult, deadline: float, *, due: bool = False) -> bool:
        """Deliver everything due now; False when stopped early (error, budget, lost lock).
        `due`: the caller has just seen a row due, so the first look is skipped."""
        while due or has_due_rows(self.model, self.now):
            due = False
            step = self.next_batch(result, deadline)
            if step is not Next.CLAIM_AGAIN:
                return step is Next.DRAINED
            if not self.overlap:
                return self.drain_loop(result, deadline)
            if not self.drain_on_two_connections(result, deadline):
                return False
            # Each connection stopped at a short claim; look once more rather than trust that
            # the other one had all the rest in its last batch.
        result.drained = True
        return True

    def drain_on_two_connections(self, result: SweepResult, deadline: float) -> bool:
        helper = BatchThread(self, result, deadline)
        helper.start()
        try:
            drained = self.drain_loop(result, deadline, helper.stop)
        except BaseException:
            helper.stop.set()  # and wait for it: the lock must outlive both connections' work
            helper.join()
            raise
        if not drained:
            helper.stop.set()  # an error or the lost lock stops both connections
        if not helper.finish() or not drained:
            result.drained = False
            return False
        return True

    def drain_loop(
        self, result: SweepResult, deadline: float, stop: threading.Event | None = None
    ) -> bool:
        """Batch after batch until one leaves nothing due (True) or the sweep must stop."""
        step = Next.CLAIM_AGAIN
        while step is Next.CLAIM_AGAIN:
            step = self.next_batch(result, deadline, stop)
        return step is Next.DRAINED

    def next_batch(
        self, result: SweepResult, deadline: float, stop: threading.Event | None = None
    ) -> Next:
        allowance = self.allowance(result, deadline, stop)
        if allowance.rows == 0:
            result.drained = False
            return Next.STOPPED  # the budget is spent until past the deadline
        try:
            batch = self.batch(allowance)
        except BaseException:
            self.give_back(allowance.rows)  # the batch rolled back: none of it was marked
            raise
        self.give_back(allowance.rows - batch.delivered)
        with self.guard:
            result.add(batch)
        if batch.error:
            return Next.STOPPED
        if batch.claimed < allowance.rows and not (self.chase and self.more_due(batch)):
            result.drained = True
            return Next.DRAINED
        result.drained = False
        stopped = stop is not None and stop.is_set()
        if stopped or time.monotonic() >= deadline or not self.lock.extend():
            return Next.STOPPED
        return Next.CLAIM_AGAIN

    def allowance(
        self, result: SweepResult, deadline: float, stop: threading.Event | None
    ) -> Allowance:
        """How many rows the next batch may claim: the batch size, or what the rate limit grants
        now, waiting for it (not spinning) if it comes before the deadline; 0 if it does not."""
        if self.budget is None:
            return Allowance(self.batch_size)
        waited = 0.0
        while (grant := self.budget.take(self.batch_size)).rows == 0:
            if time.monotonic() + grant.wait >= deadline or (stop and stop.is_set()):
                break
            (stop or threading.Event()).wait(grant.wait)  # a stopped helper wakes at once
            waited += grant.wait
        with self.guard:
            result.rate_wait += waited
        return Allowance(grant.rows, cut=grant.rows < self.batch_size, waited=waited > 0)

    def give_back(self, rows: int) -> None:
        # Reserve, then give back what was not published (fewer rows due than granted,
        # expired, refused, rolled back): a grant taken before the claim can never let two
        # sweepers publish past the limit, as counting after each publish could.
        if self.budget is not None and rows > 0:
            self.budget.give_back(rows)

    def more_due(self, batch: BatchResult) -> bool:
        """After a short batch: did its after_batch hook leave rows that are already due?"""
        return batch.delivered > 0 and has_due_rows(self.model, self.now)


def overlaps(publisher: Publisher, now: datetime | None, model: type[ScheduledEvent]) -> bool:
    """A second connection pays where the batched Redis publisher is in use (thread-safe, one
    round trip a batch): there the sweeper otherwise waits on PostgreSQL for much of each
    batch. Not inside a caller's transaction, whose rows another connection cannot see, nor
    with a fixed `now` (tests)."""
    connection = connections[database_of(model)]
    return (
        now is None
        and isinstance(publisher, RedisBatchPublisher)
        and connection.vendor == "postgresql"
        and not connection.in_atomic_block
    )


class BatchThread(threading.Thread):
    """Claims, publishes and marks batches on its own connection beside the sweep's.

    Each batch is still one transaction on one connection; `FOR UPDATE SKIP LOCKED` keeps the
    two connections' batches apart, as it keeps two sweeper slots apart.
    """

    def __init__(self, drain: Drain, result: SweepResult, deadline: float) -> None:
        super().__init__(name=f"sweep {drain.model._meta.label} batches", daemon=True)
        self.drain, self.result, self.deadline = drain, result, deadline
        self.stop = threading.Event()
        self.drained = False
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.drained = self.drain.drain_loop(self.result, self.deadline, self.stop)
        except BaseException as exc:  # handed to the sweep's own thread by finish()
            self.error = exc
        finally:
            self.stop.set()
            connections.close_all()  # this thread's own connections

    def finish(self) -> bool:
        self.join()
        if self.error is not None:
            raise self.error
        return self.drained


def drain_for(
    model: type[ScheduledEvent],
    *,
    now: datetime | None,
    conf: SchedulingSettings,
    lock: SweepLock,
    publisher: Publisher,
) -> Drain:
    # Rows this sweep could not publish wait for the next tick: no retry within milliseconds.
    set_aside: set[int] = set()
    # A fairness_key's due rows ranked once for the sweep's batches, not once a batch.
    turns = Turns(model, conf.batch_size) if model.fairness_key else None
    one = partial(
        sweep_batch,
        model,
        now=now,
        publisher=publisher,
        conf=conf,
        set_aside=set_aside,
        turns=turns,
    )
    # A claim that met a row a reschedule moved to another partition runs again (moved.py).
    batch = retried_on_moved_rows(one, f"sweep of {model._meta.label}")
    return Drain(
        model=model,
        now=now,
        batch_size=conf.batch_size,
        lock=lock,
        batch=batch,
        overlap=overlaps(publisher, now, model),
        # A fixed `now` (scheduling.delivery.testing's runs, tests) is not paced: no time passes there.
        budget=budget_for(model) if now is None else None,
        longest_nap=conf.sweep_hold_nap,
    )


# A holding sweep waiting for its slot's lock tries again after LOCK_POLL, then twice as long
# each time up to LOCK_POLL_MAX: a tick's sweep meets the holder's last 0.1-0.25 s, which
# 5 ms tries cost thirty Redis round trips a model a tick; this takes six, and hands over at
# most LOCK_POLL_MAX after the holder lets go.
LOCK_POLL = 0.005
LOCK_POLL_MAX = 0.04
# A holding sweep stays on this much longer than its hold, so that the next tick's sweep is
# already waiting for the lock when it lets go, even if that tick reached the worker late.
HOLD_HANDOVER = 0.25


def holding_until(hold: float, *, fixed_clock: bool) -> float | None:
    """When a sweep called now with `hold` lets go (monotonic); None if it does not hold."""
    if hold <= 0 or fixed_clock:
        return None
    return time.monotonic() + hold + HOLD_HANDOVER


def acquire(lock: SweepLock, *, until: float | None) -> bool:
    """Take the lock now, or (holding sweeps) as soon as its holder lets it go before `until`."""
    pause = LOCK_POLL
    while not lock.acquire():
        if until is None or time.monotonic() + pause >= until:
            return False
        time.sleep(pause)
        pause = min(pause * 2, LOCK_POLL_MAX)
    return True


def deliver(
    drain: Drain, result: SweepResult, *, time_budget: float, hold_until: float | None
) -> None:
    """Drain what is due; a holding sweep then drains again at each next due time."""
    deadline = time.monotonic() + time_budget
    if hold_until is None:
        drain.drain_due(result, deadline)
        return
    deadline = min(deadline, hold_until)  # then the next tick's sweep goes on
    retrying = result.retrying
    drained = drain.drain_due(result, deadline)
    # A due row that failed this round is left to the next tick: no spinning on it.
    while drained and result.retrying == retrying:
        due = nap(drain, hold_until)
        if due is None:
            return
        if due:
            drained = drain.drain_due(result, deadline, due=True)


def nap(drain: Drain, hold_until: float) -> bool | None:
    """Sleep until the next look, looking once a wake: True when the look's next due time has
    come by the end of the nap (drain then, without looking again), False when nothing was
    due within it (a row inserted due meanwhile is seen by the next look, at most the longest
    nap + HOLD_NAP_MIN after it); None if the hold ends first or the lock is lost."""
    wait = seconds_until_next_due(drain.model)
    seconds = hold_nap(wait, drain.longest_nap)
    if time.monotonic() + seconds >= hold_until:
        return None
    time.sleep(seconds)
    if not drain.lock.extend(lazily=True):
        return None
    return wait is not None and wait <= seconds


def hold_nap(wait: float | None, longest: float = HOLD_NAP_MAX) -> float:
    """How long a holding sweep sleeps before its next look: until the next due time, but at
    least HOLD_NAP_MIN (rows falling due meanwhile go in one batch) and at most `longest`
    (a row inserted already due, or due sooner than the next one, waits no longer than that)."""
    return min(max(wait if wait is not None else longest, HOLD_NAP_MIN), longest)
