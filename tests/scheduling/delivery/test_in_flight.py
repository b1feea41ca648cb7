"""At-most-once handling with a marked effect: the row is in flight (not failed) while the effect
runs; a failure before the mark is retried like any other, one after it waits for a person."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.delivery.handling.once import effect_begins, handle_once
from scheduling.delivery.handling.signals import event_failed
from scheduling.delivery.metrics.gauges import snapshot
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.history.models import EventHistory
from scheduling.rows.models import ScheduledEvent
from tests.factories import ScheduledPingFactory
from tests.scheduling.delivery.test_handling import event_for
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db

Status = ScheduledEvent.Status


@pytest.fixture(autouse=True)
def at_most_once(monkeypatch):
    monkeypatch.setattr(ScheduledPing, "at_most_once", True)


def handle(row, *, before=None, during=None, effects=None):
    """A handler that prepares (raising `before`), then marks the effect (raising `during`)."""
    with handle_once(event_for(row), ScheduledPing, marks_effect=True) as handled:
        if handled is None:
            return "skipped"
        if before:
            raise before
        with effect_begins(handled):
            if during:
                raise during
            (effects if effects is not None else []).append(handled.pk)
    return "handled"


def test_a_failure_before_the_mark_is_retried_after_a_backoff_like_at_least_once(
    settings, django_capture_on_commit_callbacks
):
    settings.SCHEDULING_RETRY_BACKOFF = 60
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=1)
    failures = []
    event_failed.connect(receiver := lambda **kw: failures.append(kw["will_retry"]))
    try:
        with (
            django_capture_on_commit_callbacks(execute=True),
            pytest.raises(ConnectionRefusedError),
        ):
            handle(row, before=ConnectionRefusedError("connection refused"))
    finally:
        event_failed.disconnect(receiver)

    row.refresh_from_db()
    assert (row.status, row.effect_started_at, row.handled_at) == (Status.PENDING, None, None)
    assert row.last_error == "ConnectionRefusedError: connection refused"
    assert row.due_at > timezone.now() + timedelta(seconds=25)
    kinds = EventHistory.objects.filter(row_id=row.pk).values_list("kind", flat=True)
    assert "handling_failed" in set(kinds)
    assert failures == [True]


def test_a_failure_before_the_mark_out_of_tries_fails_the_row(settings):
    settings.SCHEDULING_MAX_ATTEMPTS = 2
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=2)

    with pytest.raises(TimeoutError):
        handle(row, before=TimeoutError("timed out"))

    row.refresh_from_db()
    assert (row.status, row.last_error) == (Status.FAILED, "TimeoutError: timed out")


def test_a_failure_after_the_mark_waits_for_a_person():
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=1)

    with pytest.raises(OSError, match="after DATA"):
        handle(row, during=OSError("connection dropped after DATA"))
    sweep(ScheduledPing, now=timezone.now() + timedelta(days=1))  # the reconciliation

    row.refresh_from_db()
    assert (row.status, row.handled_at) == (Status.FAILED, None)
    assert row.last_error.startswith("at-most-once: the handler failed during the effect")
    assert "OSError: connection dropped after DATA" in row.last_error


def test_the_row_is_in_flight_during_the_effect_and_handled_after():
    row = ScheduledPingFactory(status=Status.DELIVERED)

    with handle_once(event_for(row), ScheduledPing, marks_effect=True) as handled:
        before = ScheduledPing.objects.get(pk=row.pk).lifecycle
        with effect_begins(handled):
            during = ScheduledPing.objects.get(pk=row.pk)
            duplicate = handle(row)

    row.refresh_from_db()
    assert (before, during.lifecycle, during.status) == (
        "awaiting_handling",
        "in_flight",
        Status.DELIVERED,
    )
    assert duplicate == "skipped"
    assert ScheduledPing.objects.lifecycle("in_flight").count() == 0
    assert (row.lifecycle, row.last_error) == ("handled", "")


def test_of_two_deliveries_that_both_prepared_only_the_first_to_mark_runs_the_effect():
    row = ScheduledPingFactory(status=Status.DELIVERED)
    effects = []

    with (
        handle_once(event_for(row), ScheduledPing, marks_effect=True) as first,
        handle_once(event_for(row), ScheduledPing, marks_effect=True) as second,
    ):
        assert (first, second) == (row, row)  # both prepare
        with effect_begins(first):
            effects.append("first")
        with effect_begins(second):
            effects.append("second")  # never runs: EffectNotOurs, swallowed
        effects.append("after the second's mark")  # nor this

    row.refresh_from_db()
    assert effects == ["first"]
    assert row.lifecycle == "handled"


def test_a_handler_that_never_reaches_its_mark_is_handled():
    row = ScheduledPingFactory(status=Status.DELIVERED)

    with handle_once(event_for(row), ScheduledPing, marks_effect=True) as handled:
        assert handled is not None  # nothing to send: no effect_begins

    row.refresh_from_db()
    assert (row.lifecycle, row.effect_started_at) == ("handled", None)


def test_effect_begins_belongs_inside_handle_once():
    row = ScheduledPingFactory(status=Status.DELIVERED)

    with pytest.raises(RuntimeError, match="inside `with handle_once"), effect_begins(row):
        pass


def test_effect_begins_marks_nothing_for_an_at_least_once_model(monkeypatch):
    monkeypatch.setattr(ScheduledPing, "at_most_once", False)
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=1)

    with pytest.raises(OSError, match="smtp down"):
        handle(row, during=OSError("smtp down"))

    row.refresh_from_db()
    assert (row.status, row.effect_started_at) == (Status.PENDING, None)  # retried


def in_flight_since(ago):
    now = timezone.now()
    return ScheduledPingFactory(
        status=Status.DELIVERED,
        delivered_at=now - ago - timedelta(seconds=1),
        effect_started_at=now - ago,
    )


def test_reconciliation_never_republishes_a_row_in_flight(settings):
    settings.SCHEDULING_HANDLING_TIMEOUT = 60
    stuck = in_flight_since(timedelta(hours=1))
    unhandled = ScheduledPingFactory(
        status=Status.DELIVERED, delivered_at=timezone.now() - timedelta(hours=1)
    )

    result = sweep(ScheduledPing)

    stuck.refresh_from_db()
    assert result.requeued == 1  # the unhandled one
    assert (stuck.status, stuck.lifecycle, stuck.version) == (Status.DELIVERED, "in_flight", 1)
    assert list(ScheduledPing.objects.stuck_in_flight()) == [stuck]
    assert unhandled.pk not in ScheduledPing.objects.in_flight().values_list("pk", flat=True)


def test_only_rows_in_flight_past_the_handling_timeout_are_stuck(settings):
    settings.SCHEDULING_HANDLING_TIMEOUT = 60
    stuck = in_flight_since(timedelta(minutes=5))
    running = in_flight_since(timedelta(seconds=5))

    assert set(ScheduledPing.objects.in_flight()) == {stuck, running}
    assert list(ScheduledPing.objects.stuck_in_flight()) == [stuck]
    later = timezone.now() + timedelta(minutes=2)
    assert set(ScheduledPing.objects.stuck_in_flight(now=later)) == {stuck, running}
    shot = snapshot(ScheduledPing)
    assert (shot.in_flight, shot.stuck_in_flight, shot.awaiting_handling) == (2, 1, 0)


def test_a_person_retries_a_stuck_row_and_a_running_one_is_left_alone(settings):
    settings.SCHEDULING_HANDLING_TIMEOUT = 60
    stuck = in_flight_since(timedelta(minutes=5))
    running = in_flight_since(timedelta(seconds=5))

    assert ScheduledPing.objects.retry() == 1

    stuck.refresh_from_db()
    running.refresh_from_db()
    assert (stuck.status, stuck.version, stuck.effect_started_at) == (Status.PENDING, 2, None)
    assert running.lifecycle == "in_flight"


def test_a_person_cancels_stuck_and_failed_rows_business_code_cancels_pending_only(settings):
    settings.SCHEDULING_HANDLING_TIMEOUT = 60
    stuck = in_flight_since(timedelta(minutes=5))
    failed = ScheduledPingFactory(status=Status.FAILED)

    assert ScheduledPing.objects.cancel("refunded") == 0
    assert ScheduledPing.objects.cancel("checked: sent", include_failed=True) == 2

    assert set(
        ScheduledPing.objects.filter(pk__in=[stuck.pk, failed.pk]).values_list(
            "status", "cancel_reason"
        )
    ) == {(Status.CANCELLED, "checked: sent")}
