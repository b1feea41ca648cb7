"""A holding sweep (SCHEDULING_SWEEP_HOLD) that finds its slot taken waits for the holder to let
go, so each tick's sweep takes over as the previous one ends; without a hold it returns."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduling.delivery.locks import LocalSweepLock, sweep_lock
from scheduling.delivery.sweep.loop import LOCK_POLL_MAX, acquire, hold_nap
from scheduling.delivery.sweep.run import sweep
from tests.factories import ScheduledPingFactory
from tests.testapp.models import ScheduledPing

LOCK = "scheduling:sweep:testapp.scheduledping:0"


@pytest.mark.django_db
def test_a_holding_sweep_takes_over_when_the_holder_lets_go(broker):
    row = ScheduledPingFactory()
    holder = sweep_lock(LOCK, 30)
    assert holder.acquire()
    threading.Timer(0.2, holder.release).start()

    result = sweep(ScheduledPing, hold=2.0)

    assert not result.locked_out
    assert result.delivered == 1
    row.refresh_from_db()
    assert row.status == ScheduledPing.Status.DELIVERED


@pytest.mark.django_db
def test_a_holding_sweep_gives_up_when_the_holder_keeps_the_slot(broker):
    ScheduledPingFactory()
    holder = sweep_lock(LOCK, 30)
    assert holder.acquire()

    result = sweep(ScheduledPing, hold=0.1)

    assert result.locked_out
    assert result.delivered == 0
    holder.release()


def test_a_holding_sweep_naps_until_the_next_due_time_within_bounds():
    assert hold_nap(0.05) == 0.05
    assert hold_nap(0.0) == hold_nap(-3.0) == 0.01  # due already: one batch per wake at most
    assert hold_nap(None) == hold_nap(60.0) == 0.2  # nothing due soon: look again anyway
    # SCHEDULING_SWEEP_HOLD_NAP: a longer longest nap, the same floor
    assert hold_nap(None, 1.0) == hold_nap(60.0, 1.0) == 1.0
    assert hold_nap(0.6, 1.0) == 0.6
    assert hold_nap(0.0, 1.0) == 0.01


@pytest.mark.django_db
def test_an_idle_holding_sweep_looks_once_a_wake(broker):
    """Each wake costs one look for the next due time; the probe for due rows runs only at
    the sweep's start (and never again while nothing falls due)."""
    with CaptureQueriesContext(connection) as run:
        result = sweep(ScheduledPing, hold=0.3)

    statements = [query["sql"] for query in run.captured_queries]
    looks = [sql for sql in statements if "EXTRACT(EPOCH FROM due_at" in sql]
    probes = [sql for sql in statements if sql.startswith("SELECT 1 FROM") and "due_at <=" in sql]
    assert result.delivered == 0
    assert not result.locked_out
    assert len(probes) == 1
    # 0.55 s held (0.3 + the handover), a wake every 0.2 s at most
    assert 2 <= len(looks) <= 4


@pytest.mark.django_db
@override_settings(SCHEDULING_SWEEP_HOLD_NAP=1.0)
def test_a_longer_hold_nap_looks_less_often_and_still_delivers_a_known_row_at_its_due_time(
    broker,
):
    """Idle, one look a second instead of five; a row known ahead is woken for at its due time,
    not at the end of a nap."""
    with CaptureQueriesContext(connection) as idle:
        sweep(ScheduledPing, hold=1.5)
    looks = [q for q in idle.captured_queries if "EXTRACT(EPOCH FROM due_at" in q["sql"]]
    assert 1 <= len(looks) <= 2  # 1.75 s held (1.5 + the handover), a wake a second

    row = ScheduledPingFactory(due_at=timezone.now() + timedelta(seconds=0.3))
    result = sweep(ScheduledPing, hold=0.6)

    row.refresh_from_db()
    assert result.delivered == 1
    late = (row.delivered_at - row.due_at).total_seconds()
    assert 0 <= late < 0.2  # woken for it, where a nap's end would be 0.7 s late


@pytest.mark.django_db
def test_a_holding_sweep_drains_a_row_due_during_its_nap_without_probing_again(broker):
    row = ScheduledPingFactory(due_at=timezone.now() + timedelta(seconds=0.15))

    with CaptureQueriesContext(connection) as run:
        result = sweep(ScheduledPing, hold=0.3)

    row.refresh_from_db()
    assert row.status == ScheduledPing.Status.DELIVERED
    assert result.delivered == 1
    probes = [
        query
        for query in run.captured_queries
        if query["sql"].startswith("SELECT 1 FROM") and "due_at <=" in query["sql"]
    ]
    assert len(probes) == 1  # the start's: the wake at the due time claimed at once


def test_a_waiting_holding_sweep_backs_off_between_tries_of_the_lock():
    """Tries at 5, 10, 20, 40, 40... ms: a handful of round trips while the holder finishes,
    and the slot taken over at most LOCK_POLL_MAX after it lets go."""
    holder = LocalSweepLock("test:backoff", 30)
    waiter = CountingLock(LocalSweepLock("test:backoff", 30))
    assert holder.acquire()
    threading.Timer(0.2, holder.release).start()
    started = time.monotonic()

    assert acquire(waiter, until=time.monotonic() + 2)

    waited = time.monotonic() - started
    assert 0.2 <= waited <= 0.2 + LOCK_POLL_MAX + 0.05
    assert waiter.tries <= 10  # 41 at a fixed 5 ms
    waiter.release()


class CountingLock:
    def __init__(self, lock: LocalSweepLock) -> None:
        self.lock, self.tries = lock, 0

    def acquire(self) -> bool:
        self.tries += 1
        return self.lock.acquire()

    def release(self) -> None:
        self.lock.release()
