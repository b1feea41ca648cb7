"""The beat-less loop's step: every model and slot it can lock, and the purge once an hour."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from scheduling.delivery.locks import sweep_lock
from scheduling.delivery.sweep import daemon
from scheduling.delivery.sweep.daemon import Daemon, hour_of
from tests.conftest import CURRENT_TIME, queued_task_ids
from tests.factories import PingFactory, ScheduledPingFactory
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db(transaction=True)

Status = ScheduledPing.Status
LOCK = "scheduling:sweep:testapp.scheduledping:{slot}"


def test_a_tick_delivers_through_a_slot_another_host_does_not_hold(broker):
    rows = ScheduledPingFactory.create_batch(3)
    held = sweep_lock(LOCK.format(slot=0), 30.0)
    assert held.acquire()  # another host's daemon, busy on slot 0
    try:
        busy = Daemon([ScheduledPing], slots=[0, 1]).tick()
    finally:
        held.release()

    assert busy
    assert set(ScheduledPing.objects.values_list("status", flat=True)) == {Status.DELIVERED}
    assert sorted(queued_task_ids(broker, "testapp")) == sorted(row.event_id for row in rows)


def test_a_tick_with_every_slot_held_elsewhere_leaves_the_rows_to_their_holders(broker):
    ScheduledPingFactory.create_batch(2)
    held = sweep_lock(LOCK.format(slot=0), 30.0)
    assert held.acquire()
    try:
        assert not Daemon([ScheduledPing], slots=[0]).tick()
    finally:
        held.release()
    assert set(ScheduledPing.objects.values_list("status", flat=True)) == {Status.PENDING}


def test_the_purge_runs_on_the_hour_in_one_daemon_of_all_hosts():
    old = ScheduledPing.objects.create(
        ping=PingFactory(), due_at=CURRENT_TIME, status=Status.CANCELLED
    )
    ScheduledPing.objects.filter(pk=old.pk).update(cancelled_at=timezone.now() - timedelta(days=8))
    started = CURRENT_TIME.replace(minute=40)
    hosts = [Daemon([ScheduledPing], [0], purged_hour=hour_of(started)) for _ in range(2)]

    assert [host.purge_if_due(started + timedelta(minutes=10)) for host in hosts] == [False] * 2
    assert ScheduledPing.objects.filter(pk=old.pk).exists()
    next_hour = started + timedelta(minutes=20)
    assert [host.purge_if_due(next_hour) for host in hosts] == [True, False]
    assert not ScheduledPing.objects.filter(pk=old.pk).exists()
    assert [host.purge_if_due(next_hour + timedelta(minutes=5)) for host in hosts] == [False] * 2


@override_settings(SCHEDULING_BATCH_SIZE=2)
def test_the_hourly_purge_runs_a_slice_per_tick_and_resumes_where_it_stopped(monkeypatch):
    monkeypatch.setattr(daemon, "PURGE_SLICE", 1e-6)  # one batch of 2 rows per tick
    old = ScheduledPingFactory.create_batch(5, status=Status.CANCELLED)
    ScheduledPing.objects.update(cancelled_at=timezone.now() - timedelta(days=8))
    host = Daemon([ScheduledPing], [0], purged_hour=hour_of(CURRENT_TIME))
    next_hour = CURRENT_TIME + timedelta(hours=1)

    left = [ScheduledPing.objects.count()]
    while host.purge_if_due(next_hour):  # the sweeps of each tick would run in between
        left.append(ScheduledPing.objects.count())

    # Every scheduled model's table is walked, one batch a tick; this one's 2 rows at a time.
    assert sorted(set(left), reverse=True) == [5, 3, 1, 0]
    assert not host.purge_left
    assert host.purge_budget == 0
    assert not ScheduledPing.objects.filter(pk__in=[row.pk for row in old]).exists()
    assert not host.purge_if_due(next_hour + timedelta(minutes=1))


class LoopStopped(Exception):
    pass


class LoopClock:
    """The sweep command's clock: each tick takes the next of `ticks` seconds; the loop stops
    after as many sleeps."""

    def __init__(self, ticks: list[float]) -> None:
        self.now, self.ticks = 0.0, list(ticks)
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def tick(self, *args, **kwargs) -> bool:
        self.now += self.ticks.pop(0)
        return True

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if not self.ticks:
            raise LoopStopped


def test_the_loop_sleeps_what_is_left_of_the_interval_and_not_after_a_long_tick(
    monkeypatch, settings
):
    from scheduling.management.commands import sweep as command

    settings.SCHEDULING_SWEEP_INTERVAL = 1.0
    clock = LoopClock([10.0, 0.25])  # a tick that spent its time budget, then a short one
    monkeypatch.setattr(command, "time", clock)
    monkeypatch.setattr(Daemon, "tick", clock.tick)

    with pytest.raises(LoopStopped):
        call_command("sweep", "--loop", "testapp.ScheduledPing")

    assert clock.sleeps == [0.0, 0.75]
