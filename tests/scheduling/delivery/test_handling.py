from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.delivery.handling.once import handle_once, retry_delay
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.models import ScheduledEvent
from tests.factories import ScheduledPingFactory
from tests.testapp.models import PingEffect, ScheduledPing
from tests.testapp.tasks import handle_ping

pytestmark = pytest.mark.django_db

Status = ScheduledEvent.Status


def event_for(row, version=None):
    version = version or row.version
    event_id = f"testapp.scheduledping:{row.pk}:v{version}"
    return {"id": event_id, "model": "testapp.scheduledping", "pk": row.pk, "version": version}


def test_it_handles_a_delivered_event_once_and_records_handled_at():
    row = ScheduledPingFactory(status=Status.DELIVERED)

    assert handle_ping(event_for(row)) == "handled"
    assert handle_ping(event_for(row)) == "skipped"

    row.refresh_from_db()
    assert row.handled_at is not None
    assert PingEffect.objects.count() == 1


def test_it_skips_an_event_whose_row_is_still_pending():
    # Published by a sweep whose commit then failed: the row is published again later.
    row = ScheduledPingFactory(status=Status.PENDING)

    assert handle_ping(event_for(row)) == "skipped"
    assert PingEffect.objects.count() == 0


def test_it_skips_a_stale_version():
    row = ScheduledPingFactory(status=Status.DELIVERED, version=2)

    assert handle_ping(event_for(row, version=1)) == "skipped"
    assert PingEffect.objects.count() == 0


@pytest.mark.parametrize("status", [Status.CANCELLED, Status.EXPIRED, Status.FAILED])
def test_it_skips_rows_that_were_not_delivered(status):
    row = ScheduledPingFactory(status=status)

    assert handle_ping(event_for(row)) == "skipped"


def test_it_skips_a_deleted_row():
    row = ScheduledPingFactory(status=Status.DELIVERED)
    event = event_for(row)
    ScheduledPing.objects.filter(pk=row.pk).delete()

    assert handle_ping(event) == "skipped"


def fail_handling(row, error=None):
    error = error or RuntimeError("smtp down")

    def handle():
        with handle_once(event_for(row)) as handled:
            assert handled is not None
            raise error

    with pytest.raises(type(error)):
        handle()


def test_a_failed_handling_is_recorded_and_the_event_is_due_again_after_a_backoff(settings):
    settings.SCHEDULING_RETRY_BACKOFF = 5
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=1)
    started = timezone.now()

    fail_handling(row)

    row.refresh_from_db()
    assert row.status == Status.PENDING
    assert row.handled_at is None
    assert row.last_error == "RuntimeError: smtp down"
    assert started + timedelta(seconds=2.5) <= row.due_at <= timezone.now() + timedelta(seconds=5)
    assert handle_ping(event_for(row)) == "skipped"  # the same message again: not yet
    assert PingEffect.objects.count() == 0


def test_the_sweep_publishes_the_failed_event_again_and_it_is_handled_once(broker):
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=1)
    fail_handling(row)
    row.refresh_from_db()

    sweep(ScheduledPing, now=row.due_at)

    row.refresh_from_db()
    assert (row.status, row.attempts, row.version) == (Status.DELIVERED, 2, 1)
    assert handle_ping(event_for(row)) == "handled"
    assert handle_ping(event_for(row)) == "skipped"
    assert PingEffect.objects.count() == 1


def test_out_of_tries_a_failed_handling_fails_the_row(settings):
    settings.SCHEDULING_MAX_ATTEMPTS = 3
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=3)

    fail_handling(row, ValueError("no such address"))

    row.refresh_from_db()
    assert row.status == Status.FAILED
    assert row.last_error == "ValueError: no such address"


def test_retry_brings_a_failed_row_back_and_it_is_handled_once(broker):
    row = ScheduledPingFactory(status=Status.FAILED, attempts=10, last_error="boom")
    stale = event_for(row)

    assert ScheduledPing.objects.filter(pk=row.pk).retry() == 1
    sweep(ScheduledPing)

    row.refresh_from_db()
    assert (row.status, row.attempts, row.version, row.last_error) == (Status.DELIVERED, 1, 2, "")
    assert handle_ping(stale) == "skipped"  # a message of the failed version, still queued
    assert handle_ping(event_for(row)) == "handled"
    assert PingEffect.objects.count() == 1


@pytest.mark.parametrize(
    ("attempts", "ceiling"), [(1, 5), (2, 10), (3, 20), (7, 320), (8, 600), (60, 600), (10**6, 600)]
)
def test_the_backoff_doubles_up_to_its_maximum_with_jitter(settings, attempts, ceiling):
    settings.SCHEDULING_RETRY_BACKOFF = 5
    settings.SCHEDULING_RETRY_BACKOFF_MAX = 600

    delays = [retry_delay(attempts).total_seconds() for _ in range(50)]

    assert all(ceiling / 2 <= delay <= ceiling for delay in delays)
    assert len(set(delays)) > 1


def test_an_event_not_handled_within_the_timeout_is_published_again(settings, broker):
    settings.SCHEDULING_HANDLING_TIMEOUT = 600
    now = timezone.now()
    lost = ScheduledPingFactory(
        status=Status.DELIVERED, attempts=1, delivered_at=now - timedelta(seconds=601)
    )
    recent = ScheduledPingFactory(status=Status.DELIVERED, delivered_at=now - timedelta(seconds=5))
    handled = ScheduledPingFactory(
        status=Status.DELIVERED, delivered_at=now - timedelta(hours=1), handled_at=now
    )

    result = sweep(ScheduledPing, now=now)

    assert (result.requeued, result.delivered) == (1, 1)
    lost.refresh_from_db()
    assert (lost.status, lost.attempts, lost.version) == (Status.DELIVERED, 2, 1)
    for row in (recent, handled):
        before = row.updated_at
        row.refresh_from_db()
        assert row.updated_at == before
    assert handle_ping(event_for(lost)) == "handled"


def test_an_unhandled_event_out_of_tries_fails_instead(settings, broker):
    settings.SCHEDULING_MAX_ATTEMPTS = 2
    now = timezone.now()
    row = ScheduledPingFactory(
        status=Status.DELIVERED, attempts=2, delivered_at=now - timedelta(hours=1)
    )

    result = sweep(ScheduledPing, now=now)

    row.refresh_from_db()
    assert (result.requeued, result.failed, row.status) == (0, 1, Status.FAILED)
    assert "not handled within" in row.last_error


def test_an_at_most_once_model_claims_the_row_before_the_effect(monkeypatch):
    monkeypatch.setattr(ScheduledPing, "at_most_once", True)
    row = ScheduledPingFactory(status=Status.DELIVERED)

    with handle_once(event_for(row)) as handled:
        assert handled is not None
        during = ScheduledPing.objects.get(pk=row.pk)
        assert handle_ping(event_for(row)) == "skipped"  # a duplicate, mid-effect

    row.refresh_from_db()
    # In flight, not failed: still delivered, the effect's start recorded.
    assert (during.status, during.lifecycle, during.last_error) == (
        Status.DELIVERED,
        "in_flight",
        "",
    )
    assert during.effect_started_at is not None
    assert (row.status, row.lifecycle, row.last_error) == (Status.DELIVERED, "handled", "")


def test_an_at_most_once_failure_waits_for_a_person(monkeypatch, broker):
    monkeypatch.setattr(ScheduledPing, "at_most_once", True)
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=1)

    fail_handling(row)
    sweep(ScheduledPing, now=timezone.now() + timedelta(days=1))

    row.refresh_from_db()
    assert row.status == Status.FAILED
    assert "may have happened: RuntimeError: smtp down" in row.last_error
    assert row.handled_at is None


def test_it_refuses_an_event_of_another_model():
    row = ScheduledPingFactory(status=Status.DELIVERED)
    event = {**event_for(row), "model": "purchases.scheduledpurchase"}

    with pytest.raises(ValueError, match=r"is not a testapp\.ScheduledPing event"):
        handle_once(event, ScheduledPing)


def test_handler_tasks_survive_worker_loss_and_leave_retries_to_the_sweep():
    assert handle_ping.acks_late
    assert handle_ping.reject_on_worker_lost
    assert not getattr(handle_ping, "autoretry_for", ())


@pytest.mark.django_db(transaction=True)
def test_a_retry_during_an_at_most_once_effect_waits_and_starts_no_second_effect(monkeypatch):
    import threading

    from django.db import connection

    monkeypatch.setattr(ScheduledPing, "at_most_once", True)
    monkeypatch.setattr(ScheduledPing, "handling_timeout", 0.001)  # stuck as soon as it starts
    row = ScheduledPingFactory(status=Status.DELIVERED)
    in_effect, release = threading.Event(), threading.Event()

    def handler():
        try:
            with handle_once(event_for(row)) as handled:
                assert handled is not None
                in_effect.set()
                release.wait(10)
        finally:
            connection.close()

    worker = threading.Thread(target=handler)
    worker.start()
    assert in_effect.wait(10)
    # In flight past the handling timeout: a person retries it while the effect still runs.
    threading.Timer(0.5, release.set).start()
    retried = ScheduledPing.objects.filter(pk=row.pk).retry()
    worker.join(10)

    row.refresh_from_db()
    assert retried == 0  # it waited for the effect, then found the row handled
    assert (row.status, row.version) == (Status.DELIVERED, 1)
    assert row.handled_at is not None
