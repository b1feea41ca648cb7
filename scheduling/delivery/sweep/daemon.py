"""What beat would run, without beat: `manage.py sweep --loop` on any number of hosts.

Each tick sweeps every model on every slot whose lock it gets (the sweep also publishes again
what was not handled in time), and once an hour one daemon across all hosts runs the purge.
A daemon that dies holding a slot's lock loses it after SCHEDULING_LOCK_TTL; another daemon's
next tick takes the slot. Correctness never rests on who sweeps (the claim decides), so two
daemons, or daemons beside beat, only share the work.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.core.cache import cache
from django.db import Error, connections
from django.db.models import Model

from scheduling.delivery.pauses.services import pauses_read_once
from scheduling.delivery.sweep.results import SweepResult
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.purge import PURGE_TIME_BUDGET, purge_all, purged_models

log = logging.getLogger(__name__)

PURGE_CLAIM_TTL = 2 * 3600  # seconds: outlives the hour it claims
# Beat's purge runs in a worker beside the sweeps; here it shares the loop with them, so it
# runs a slice per tick (within the hour's PURGE_TIME_BUDGET) instead of one 30 s stretch.
PURGE_SLICE = 0.5


def hour_of(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H")


@dataclass
class Daemon:
    models: list[type[ScheduledEvent]]
    slots: list[int]
    report: Callable[[SweepResult], None] = lambda result: None
    # The purge runs on the hour, as beat's entry does: not at every start.
    purged_hour: str = field(default_factory=lambda: hour_of(datetime.now(UTC)))
    purge_budget: float = 0.0  # seconds of this hour's purge still to run, a slice per tick
    purge_left: list[type[Model]] = field(default_factory=list)  # not walked this hour

    def tick(self, now: datetime | None = None) -> bool:
        """One round: every model and slot, then the purge if its hour came. True if any
        sweep delivered, expired, failed or requeued something."""
        busy = False
        with ExitStack() as tick:
            self.read_pauses(tick)
            for model in self.models:
                for slot in self.slots:
                    busy |= self.sweep_slot(model, slot)
        self.purge_if_due(now or datetime.now(UTC))
        return busy

    def read_pauses(self, tick: ExitStack) -> None:
        """One read of the delivery pauses for every sweep of the tick. Should it fail, each
        sweep reads its own, and a database still down fails each where sweep_slot logs it: no
        model is swept without its pause read."""
        try:
            tick.enter_context(pauses_read_once())
        except Error as exc:
            log.warning("reading the delivery pauses failed: %s", exc)
            connections.close_all()

    def sweep_slot(self, model: type[ScheduledEvent], slot: int) -> bool:
        try:
            result = sweep(model, slot=slot)
        except Error as exc:
            # A failover, a restart, an unreachable database: the open transaction rolled back,
            # so no row was marked without being published. The next tick opens a new
            # connection, which finds the primary among DATABASE_URL's hosts.
            log.warning("sweep of %s failed: %s", model._meta.label, exc)
            connections.close_all()
            return False
        done = bool(result.delivered or result.expired or result.failed or result.requeued)
        if done or result.error:
            self.report(result)
        return done

    def purge_if_due(self, now: datetime) -> bool:
        """On a new hour, the daemon that claims it (one across all hosts) purges: in slices
        of PURGE_SLICE seconds, one per tick, so its sweeps are never held up for long."""
        hour = hour_of(now)
        if hour != self.purged_hour:
            self.purged_hour = hour
            if claim_purge(hour):
                self.purge_budget, self.purge_left = PURGE_TIME_BUDGET, purged_models()
        if self.purge_budget <= 0:
            return False
        self.purge_slice()
        return True

    def purge_slice(self) -> None:
        started = time.monotonic()
        try:
            results = purge_all(
                time_budget=min(PURGE_SLICE, self.purge_budget), models=self.purge_left
            )
        except Error as exc:
            log.warning("purge failed: %s", exc)
            connections.close_all()
            self.purge_budget = 0.0
            return
        self.purge_budget -= time.monotonic() - started
        walked = {result.model for result in results if result.resume_after is None}
        self.purge_left = [m for m in self.purge_left if m._meta.label not in walked]
        if not self.purge_left:
            self.purge_budget = 0.0  # every table walked to its end: done for this hour


def claim_purge(hour: str) -> bool:
    holder = f"{socket.gethostname()}:{os.getpid()}"
    try:
        return bool(cache.add(f"scheduling:purge:hour:{hour}", holder, PURGE_CLAIM_TTL))
    except Exception as exc:  # the purge is safe twice (SKIP LOCKED); the claim only saves work
        log.warning("purge claim for %s failed (%s); purging anyway", hour, exc)
        return True
