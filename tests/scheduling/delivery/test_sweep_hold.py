"""A holding sweep (SCHEDULING_SWEEP_HOLD) that finds its slot taken waits for the holder to let
go, so each tick's sweep takes over as the previous one ends; without a hold it returns."""

import threading

import pytest

from scheduling.delivery.locks import sweep_lock
from scheduling.delivery.sweep.loop import hold_nap
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
