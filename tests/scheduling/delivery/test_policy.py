"""A scheduled model's own retry policy, and the failure signals, in-process."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from scheduling.delivery.handling.once import handle_once, retry_delay
from scheduling.delivery.handling.signals import event_failed, event_gave_up
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.states import Status
from tests.factories import PingFactory, ScheduledPingFactory
from tests.testapp.models import ScheduledPing
from tests.testapp.tasks import handle_ping

pytestmark = pytest.mark.django_db


def event_for(row):
    return {"model": "testapp.scheduledping", "pk": row.pk, "version": row.version, "id": "e"}


def fail_handling(row):
    def handle():
        with handle_once(event_for(row)) as handled:
            assert handled is not None
            raise RuntimeError("smtp down")

    with pytest.raises(RuntimeError):
        handle()


@pytest.fixture
def heard():
    """What the failure signals said, as (signal, event id, error, will_retry)."""
    said = []

    def on_failed(sender, row, error, will_retry, **kwargs):
        said.append(("failed", row.event_id, error, will_retry))

    def on_gave_up(sender, row, error, **kwargs):
        said.append(("gave up", row.event_id, error, None))

    event_failed.connect(on_failed, sender=ScheduledPing)
    event_gave_up.connect(on_gave_up, sender=ScheduledPing)
    yield said
    event_failed.disconnect(on_failed, sender=ScheduledPing)
    event_gave_up.disconnect(on_gave_up, sender=ScheduledPing)


def test_the_models_max_attempts_beats_the_setting(settings, monkeypatch):
    settings.SCHEDULING_MAX_ATTEMPTS = 10
    monkeypatch.setattr(ScheduledPing, "max_attempts", 1)
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=1)

    fail_handling(row)

    row.refresh_from_db()
    assert row.status == Status.FAILED


def test_without_its_own_max_attempts_a_model_takes_the_setting(settings):
    settings.SCHEDULING_MAX_ATTEMPTS = 4
    assert ScheduledPing.get_max_attempts() == 4
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=3)

    fail_handling(row)

    row.refresh_from_db()
    assert row.status == Status.PENDING


def test_the_models_backoff_and_its_maximum_beat_the_settings(settings, monkeypatch):
    settings.SCHEDULING_RETRY_BACKOFF, settings.SCHEDULING_RETRY_BACKOFF_MAX = 5, 600
    monkeypatch.setattr(ScheduledPing, "retry_backoff", 60.0)
    monkeypatch.setattr(ScheduledPing, "retry_backoff_max", 90.0)
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=2)
    started = timezone.now()

    fail_handling(row)

    row.refresh_from_db()
    # Second try: 60 s doubled, capped at 90 s, with jitter down to half of it.
    assert started + timedelta(seconds=45) <= row.due_at <= timezone.now() + timedelta(seconds=90)
    delays = {retry_delay(1, ScheduledPing).total_seconds() for _ in range(20)}
    assert all(30 <= delay <= 60 for delay in delays)


def test_the_models_handling_timeout_decides_the_reconciliation(settings, broker, monkeypatch):
    settings.SCHEDULING_HANDLING_TIMEOUT = 600
    monkeypatch.setattr(ScheduledPing, "handling_timeout", 30.0)
    now = timezone.now()
    lost = ScheduledPingFactory(
        status=Status.DELIVERED, attempts=1, delivered_at=now - timedelta(seconds=31)
    )
    recent = ScheduledPingFactory(status=Status.DELIVERED, delivered_at=now - timedelta(seconds=5))

    result = sweep(ScheduledPing, now=now)

    assert (result.requeued, result.delivered) == (1, 1)
    lost.refresh_from_db()
    recent.refresh_from_db()
    assert (lost.attempts, recent.attempts) == (2, 0)  # published again; left waiting


def test_a_failed_try_with_tries_left_is_heard_once_after_the_commit(
    heard, django_capture_on_commit_callbacks
):
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=1)

    with django_capture_on_commit_callbacks(execute=True):
        fail_handling(row)
        assert heard == []  # not before the commit

    assert heard == [("failed", row.event_id, "RuntimeError: smtp down", True)]


def test_the_last_try_is_heard_as_a_failure_and_a_give_up(
    heard, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(ScheduledPing, "max_attempts", 1)
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=1)

    with django_capture_on_commit_callbacks(execute=True):
        fail_handling(row)

    assert heard == [
        ("failed", row.event_id, "RuntimeError: smtp down", False),
        ("gave up", row.event_id, "RuntimeError: smtp down", None),
    ]


def test_a_failure_that_rolls_back_is_not_heard(heard, django_capture_on_commit_callbacks):
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=1)

    def fail_then_roll_back():
        with transaction.atomic():
            fail_handling(row)
            raise ZeroDivisionError

    with django_capture_on_commit_callbacks(execute=True), pytest.raises(ZeroDivisionError):
        fail_then_roll_back()

    assert heard == []


def test_a_receiver_that_raises_changes_nothing_for_the_handling(
    heard, django_capture_on_commit_callbacks, caplog
):
    def broken(**kwargs):
        raise LookupError("pager unreachable")

    event_failed.connect(broken, sender=ScheduledPing)
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=1)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            fail_handling(row)
    finally:
        event_failed.disconnect(broken, sender=ScheduledPing)

    assert len(heard) == 1  # the other receiver still heard it
    assert "pager unreachable" in caplog.text
    row.refresh_from_db()
    assert row.status == Status.PENDING


def test_a_row_that_cannot_be_published_gives_up_at_the_models_max_attempts(
    heard, broker, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(ScheduledPing, "max_attempts", 1)
    row = ScheduledPingFactory(ping=PingFactory(name="poison"))

    with django_capture_on_commit_callbacks(execute=True):
        result = sweep(ScheduledPing)

    assert result.failed == 1
    assert [(said[0], said[3]) for said in heard] == [("failed", False), ("gave up", None)]
    assert heard[0][1] == row.event_id


def test_an_event_not_handled_in_time_is_heard_each_time_then_gives_up(
    heard, broker, settings, django_capture_on_commit_callbacks
):
    settings.SCHEDULING_MAX_ATTEMPTS = 2
    now = timezone.now()
    row = ScheduledPingFactory(
        status=Status.DELIVERED, attempts=1, delivered_at=now - timedelta(hours=1)
    )

    with django_capture_on_commit_callbacks(execute=True):
        sweep(ScheduledPing, now=now)  # requeued and published again: attempt 2
    ScheduledPing.objects.filter(pk=row.pk).update(delivered_at=now - timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=True):
        sweep(ScheduledPing, now=now)  # out of tries

    assert [(said[0], said[3]) for said in heard] == [
        ("failed", True),
        ("failed", False),
        ("gave up", None),
    ]
    assert "not handled within" in heard[-1][2]


def test_handled_events_send_nothing(heard, django_capture_on_commit_callbacks):
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=1)

    with django_capture_on_commit_callbacks(execute=True):
        assert handle_ping(event_for(row)) == "handled"

    assert heard == []
