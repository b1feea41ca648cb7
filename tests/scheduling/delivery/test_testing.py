"""scheduling.delivery.testing: the sweep and the worker in one call, inside a host's test."""

from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test import TestCase
from django.utils import timezone

from scheduling.delivery.testing import assert_scheduled, run_due, scheduled
from scheduling.rows.history.models import EventHistory
from tests.factories import PingFactory, ScheduledPingFactory
from tests.testapp.models import PingEffect, ScheduledPing

DUE = timezone.now().replace(microsecond=0) + timedelta(days=3)
SECOND = timedelta(seconds=1)

Status = ScheduledPing.Status


def reminder(name="reminder"):
    return ScheduledPingFactory(due_at=DUE, ping=PingFactory(name=name))


@pytest.mark.django_db
def test_it_handles_the_event_once_when_due_and_not_before():
    row = reminder()

    assert run_due(ScheduledPing, now=DUE - SECOND) == 0
    assert run_due(ScheduledPing, now=DUE + SECOND) == 1
    assert run_due(ScheduledPing, now=DUE + SECOND) == 0

    row.refresh_from_db()
    assert (row.status, row.attempts) == (Status.DELIVERED, 1)
    assert row.handled_at is not None
    assert list(PingEffect.objects.values_list("event_id", flat=True)) == [row.event_id]


@pytest.mark.django_db
def test_it_follows_time_machine_and_sweeps_every_model_by_default():
    reminder()

    with time_machine.travel(DUE - SECOND, tick=False):
        assert run_due() == 0
    with time_machine.travel(DUE + SECOND, tick=False):
        assert run_due() == 1
        assert run_due() == 0


@pytest.mark.django_db
def test_a_failing_handler_leaves_the_error_and_the_backoff_on_the_row():
    row = reminder("fail:1")  # the handler fails its first try

    with time_machine.travel(DUE + SECOND, tick=False):
        assert run_due(ScheduledPing) == 0
        assert run_due(ScheduledPing) == 0  # the backoff runs from the travelled clock

    row.refresh_from_db()
    assert (row.status, row.attempts) == (Status.PENDING, 1)
    assert row.last_error == "RuntimeError: planned failure on try 1 of fail:1"
    assert row.due_at > DUE + SECOND
    assert row.business_time == DUE
    assert EventHistory.objects.filter(row_id=row.pk, kind="handling_failed").count() == 1
    assert not PingEffect.objects.exists()

    with time_machine.travel(row.due_at + SECOND, tick=False):
        assert run_due(ScheduledPing) == 1  # the retry succeeds


@pytest.mark.django_db
def test_an_explicit_now_is_the_claims_cutoff_and_the_backoff_runs_from_the_clock():
    row = reminder("fail:1")

    assert run_due(ScheduledPing, now=DUE + SECOND) == 0

    row.refresh_from_db()
    assert (row.status, row.attempts) == (Status.PENDING, 1)
    assert timezone.now() < row.due_at < DUE  # due again soon, by the clock the handler saw
    assert run_due(ScheduledPing, now=row.due_at + SECOND) == 1


@pytest.mark.django_db
def test_raise_errors_raises_the_handler_error_once_every_event_ran():
    failing, fine = reminder("fail:1"), reminder()

    with pytest.raises(RuntimeError, match="planned failure"):
        run_due(ScheduledPing, now=DUE + SECOND, raise_errors=True)

    failing.refresh_from_db()
    fine.refresh_from_db()
    assert (failing.attempts, failing.status) == (1, Status.PENDING)
    assert fine.handled_at is not None


@pytest.mark.django_db(transaction=True)
def test_it_works_with_real_commits():
    row = reminder("fail:1")

    assert run_due(ScheduledPing, now=DUE + SECOND) == 0
    row.refresh_from_db()
    assert (row.attempts, row.status) == (1, Status.PENDING)
    assert run_due(ScheduledPing, now=row.due_at + SECOND) == 1


@pytest.mark.django_db
def test_it_needs_no_redis_nor_broker(monkeypatch):
    reached = []

    def refuse(*args, **kwargs):
        reached.append(args)
        raise AssertionError("run_due reached for Redis or a broker")

    monkeypatch.setattr("scheduling.delivery.sweep.run.sweep_lock", refuse)
    monkeypatch.setattr("scheduling.delivery.sweep.run.shared_publisher", refuse)
    monkeypatch.setattr("scheduling.delivery.metrics.store.redis_client_for_locks", refuse)
    reminder()

    assert run_due(ScheduledPing, now=DUE + SECOND) == 1
    assert not reached  # the metrics' writes would swallow the error


@pytest.mark.django_db
def test_the_test_transaction_keeps_its_own_settings():
    def settings() -> tuple[str, str]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('synchronous_commit'),"
                " current_setting('idle_in_transaction_session_timeout')"
            )
            row = cursor.fetchone()
        return row[0], row[1]

    before = settings()
    reminder()

    assert run_due(ScheduledPing, now=DUE + SECOND) == 1
    assert settings() == before


@pytest.mark.django_db
def test_an_unregistered_handler_task_is_named(monkeypatch):
    monkeypatch.setattr(ScheduledPing, "handler_task", "testapp.no_such_task")
    reminder()

    with pytest.raises(LookupError, match=r"testapp\.no_such_task"):
        run_due(ScheduledPing, now=DUE + SECOND)


@pytest.mark.django_db
def test_scheduled_lists_pending_rows_soonest_first():
    later = ScheduledPingFactory(due_at=DUE + timedelta(hours=1), ping=PingFactory(group="b"))
    sooner = ScheduledPingFactory(due_at=DUE, ping=PingFactory(group="b"))
    ScheduledPingFactory(due_at=DUE, ping=PingFactory(group="c"))
    ScheduledPingFactory(due_at=DUE, ping=PingFactory(group="b"), status=Status.CANCELLED)

    assert scheduled(ScheduledPing, ping__group="b") == [sooner, later]
    assert assert_scheduled(ScheduledPing, at=DUE, ping__group="b") == sooner


@pytest.mark.django_db
def test_assert_scheduled_lists_what_is_pending_when_it_fails():
    row = reminder()

    with pytest.raises(AssertionError, match=f"found 0; pending and matching: pk {row.pk} due"):
        assert_scheduled(ScheduledPing, at=DUE + SECOND, ping=row.ping)
    with pytest.raises(AssertionError, match="found 0; pending and matching: none"):
        assert_scheduled(ScheduledPing, ping__name="other")


class RunDueInATestCase(TestCase):
    """Django's TestCase: every test inside a transaction rolled back at its end."""

    def test_the_reminder_goes_out_once_when_due(self) -> None:
        row = reminder()

        assert run_due(ScheduledPing, now=DUE - SECOND) == 0
        assert run_due(ScheduledPing, now=DUE + SECOND) == 1
        assert run_due(ScheduledPing, now=DUE + SECOND) == 0

        failing = reminder("fail:1")
        assert run_due(ScheduledPing, now=DUE + SECOND) == 0
        failing.refresh_from_db()
        assert (failing.attempts, failing.status) == (1, Status.PENDING)
        assert "planned failure" in failing.last_error
        row.refresh_from_db()
        assert row.handled_at is not None
