"""Holding sweeps (SCHEDULING_SWEEP_HOLD): a sweep that stays on after draining, waking at each
next due time (by the database's clock) to deliver it then instead of at the next tick; and
that waits for its slot's lock rather than give up, so that each tick's sweep takes over as the
previous one ends.

Each wake costs a probe for the next due time and, when something is due, one batch: at most
1/HOLD_NAP_MIN wakes a second while events fall due, 1/HOLD_NAP_MAX when nothing is due soon;
a due row waits up to HOLD_NAP_MIN for its wake.
"""

from __future__ import annotations

import time

from scheduling.delivery.locks import SweepLock
from scheduling.delivery.sweep.loop import Drain
from scheduling.delivery.sweep.results import SweepResult
from scheduling.delivery.sweep.sql import seconds_until_next_due

HOLD_NAP_MIN = 0.01
HOLD_NAP_MAX = 0.2
LOCK_POLL = 0.005  # seconds between tries of a holding sweep waiting for its slot's lock
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
    while not lock.acquire():
        if until is None or time.monotonic() + LOCK_POLL >= until:
            return False
        time.sleep(LOCK_POLL)
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
    while drain.drain_due(result, deadline):
        if result.retrying > retrying:
            return  # a due row failed this round: leave it to the next tick, do not spin
        if not nap(drain, hold_until):
            return


def nap(drain: Drain, hold_until: float) -> bool:
    """Sleep until the next look; False if the hold ends first or the lock is lost."""
    seconds = hold_nap(seconds_until_next_due(drain.model))
    if time.monotonic() + seconds >= hold_until:
        return False
    time.sleep(seconds)
    return drain.lock.extend()


def hold_nap(wait: float | None) -> float:
    """How long a holding sweep sleeps before its next look: until the next due time, but at
    least HOLD_NAP_MIN (rows falling due meanwhile go in one batch) and at most HOLD_NAP_MAX
    (a row inserted already due, or due sooner than the next one, waits no longer than that)."""
    return min(max(wait if wait is not None else HOLD_NAP_MAX, HOLD_NAP_MIN), HOLD_NAP_MAX)
