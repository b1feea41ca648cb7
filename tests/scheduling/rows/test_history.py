"""Every scheduled row tells its story: the timeline, the business time, and who did it."""

from datetime import timedelta

import pytest
from django.utils import timezone

import scheduling
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.history.models import EventHistory
from scheduling.rows.history.timeline import timeline
from scheduling.rows.querysets import LateRetryError
from tests.conftest import start_worker, stop_process, wait_for
from tests.factories import PingFactory, ScheduledPingFactory
from tests.testapp.models import PingEffect, ScheduledPing

FUTURE = timezone.now().replace(microsecond=0) + timedelta(days=30)


def kinds(row: ScheduledPing) -> list[tuple[str, int]]:
    return [(entry.kind, entry.attempt) for entry in timeline(row)]


@pytest.mark.django_db
def test_a_new_row_has_only_its_scheduling_and_no_entry_written():
    row = ScheduledPingFactory(due_at=FUTURE)

    assert kinds(row) == [("scheduled", 0)]
    assert timeline(row)[0].detail == {"due_at": FUTURE.isoformat()}
    assert not EventHistory.objects.exists()


@pytest.mark.django_db
def test_a_shift_records_the_actor_and_both_due_times():
    row = ScheduledPingFactory(due_at=FUTURE, ping=PingFactory(group="artist-1"))

    with scheduling.actor("billing-sync"):
        moved = ScheduledPing.objects.filter(ping__group="artist-1").shift(timedelta(days=2))

    assert moved == 1
    (entry,) = [entry for entry in timeline(row) if entry.kind == "rescheduled"]
    assert entry.actor == "billing-sync"
    assert entry.detail["how"] == "shift"
    assert entry.detail["before"].startswith(FUTURE.strftime("%Y-%m-%dT%H:%M:%S"))
    assert entry.detail["after"].startswith((FUTURE + timedelta(days=2)).strftime("%Y-%m-%d"))
    assert entry.version == 2


@pytest.mark.django_db
def test_business_code_is_code_unless_it_names_itself():
    row = ScheduledPingFactory(due_at=FUTURE)

    ScheduledPing.objects.filter(pk=row.pk).cancel("refund")

    (entry,) = EventHistory.objects.filter(row_id=row.pk)
    assert (entry.kind, entry.actor, entry.detail) == ("cancelled", "code", {"reason": "refund"})


@pytest.mark.django_db
def test_an_actor_is_a_name():
    with pytest.raises(ValueError, match="non-empty name"), scheduling.actor("  "):
        pass


@pytest.mark.django_db
def test_the_business_time_stays_after_deliver_now_and_a_retry():
    row = ScheduledPingFactory(due_at=FUTURE)

    ScheduledPing.objects.filter(pk=row.pk).deliver_now()
    row.refresh_from_db()
    assert row.due_at < FUTURE
    assert row.business_time == FUTURE

    ScheduledPing.objects.filter(pk=row.pk).update(status="failed")
    ScheduledPing.objects.filter(pk=row.pk).retry(allow_late=True)
    row.refresh_from_db()
    assert row.business_time == FUTURE
    assert [kind for kind, _ in kinds(row)] == ["scheduled", "rescheduled", "retried"]


@pytest.mark.django_db
def test_a_business_move_replaces_the_business_time():
    row = ScheduledPingFactory(due_at=FUTURE)
    ScheduledPing.objects.filter(pk=row.pk).deliver_now()

    ScheduledPing.objects.filter(pk=row.pk).reschedule(FUTURE + timedelta(days=1))

    row.refresh_from_db()
    assert row.business_time == row.due_at == FUTURE + timedelta(days=1)


@pytest.mark.django_db
def test_retry_past_max_lateness_names_the_lateness_and_needs_allow_late():
    late = timezone.now() - timedelta(days=3)
    row = ScheduledPingFactory(due_at=late, status="expired")

    with pytest.raises(LateRetryError, match=r"max_lateness \(1 day, 0:00:00\).*allow_late=True"):
        ScheduledPing.objects.filter(pk=row.pk).retry()
    row.refresh_from_db()
    assert row.status == "expired"

    assert ScheduledPing.objects.filter(pk=row.pk).retry(allow_late=True) == 1
    (entry,) = [entry for entry in timeline(row) if entry.kind == "retried"]
    assert entry.detail["from"] == "expired"
    assert entry.detail["late_by_seconds"] > 3 * 24 * 3600 - 60


@pytest.mark.django_db
def test_the_sweep_records_an_expired_row():
    row = ScheduledPingFactory(due_at=timezone.now() - timedelta(days=2))

    assert sweep(ScheduledPing).expired == 1

    (entry,) = [entry for entry in timeline(row) if entry.kind == "expired"]
    assert entry.actor.startswith("sweep@")
    assert entry.detail["late_by_seconds"] > 2 * 24 * 3600 - 60


@pytest.mark.django_db(transaction=True)
def test_a_row_lost_by_the_broker_shows_redelivered(broker):
    row = ScheduledPingFactory()
    sweep(ScheduledPing)
    broker.delete("testapp")  # the broker lost the message

    # Past the handling timeout the reconciliation publishes it again.
    sweep(ScheduledPing, now=timezone.now() + timedelta(hours=1))

    row.refresh_from_db()
    assert kinds(row) == [("scheduled", 0), ("published", 1), ("redelivered", 1), ("published", 2)]
    redelivered = next(entry for entry in timeline(row) if entry.kind == "redelivered")
    assert redelivered.actor.startswith("reconcile@")
    assert "not handled within" in redelivered.detail["reason"]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_handler_that_fails_once_then_succeeds_tells_its_story(subprocess_env, broker):
    row = ScheduledPingFactory(ping=PingFactory(name="fail:1"))
    asked_for = row.due_at
    env = {**subprocess_env, "SCHEDULING_RETRY_BACKOFF": "0.5"}
    worker = start_worker(env, "testapp", f"history-worker-{row.pk}")
    try:
        sweep(ScheduledPing)
        wait_for(lambda: _reloaded(row).attempts == 1 and _reloaded(row).status == "pending")
        wait_for(lambda: sweep(ScheduledPing).delivered == 1, timeout=30)
        wait_for(lambda: _reloaded(row).handled_at is not None)
    finally:
        stop_process(worker)

    row.refresh_from_db()
    assert kinds(row) == [
        ("scheduled", 0),
        ("published", 1),
        ("handling_failed", 1),
        ("published", 2),
        ("handled", 2),
    ]
    failure = next(entry for entry in timeline(row) if entry.kind == "handling_failed")
    assert failure.detail["error"] == "planned failure on try 1 of fail:1"
    assert failure.detail["error_type"] == "RuntimeError"
    assert failure.actor.startswith("worker@")
    assert row.due_at > asked_for  # the backoff moved it
    assert row.business_time == asked_for
    assert PingEffect.objects.filter(ping=row.ping).count() == 1


def _reloaded(row: ScheduledPing) -> ScheduledPing:
    return ScheduledPing.objects.get(pk=row.pk)
