"""Edits and deletes racing a sweep that is publishing the schedule's occurrence: no deadlock,
no second pending occurrence, no successor from the replaced version."""

import threading
from collections.abc import Callable, Sequence
from datetime import timedelta

import pytest
from django.db import connection, connections

from scheduling.delivery.publishing import PreparedMessage, make_publisher
from scheduling.delivery.sweep.run import sweep
from scheduling.recurring.models import RecurringSchedule, ScheduledOccurrence
from scheduling.recurring.services import occurrence_skip
from scheduling.rows.outgoing import OutgoingMessage
from tests.conftest import wait_for
from tests.scheduling.recurring.conftest import json_bodies, pending

pytestmark = pytest.mark.django_db(transaction=True)


class GatedPublisher:
    """Publishes once the test opens the gate: the sweep holds its claimed rows meanwhile."""

    def __init__(self) -> None:
        self.inner = make_publisher(5.0)
        self.entered = threading.Event()
        self.gate = threading.Event()

    def prepare(self, message: OutgoingMessage) -> PreparedMessage:
        return self.inner.prepare(message)

    def publish(self, batch: Sequence[PreparedMessage]) -> dict[int, str]:
        self.entered.set()
        assert self.gate.wait(30)
        return self.inner.publish(batch)

    def backlog(self, queues: Sequence[str]) -> dict[str, int]:
        return self.inner.backlog(queues)

    def close(self) -> None:
        self.inner.close()


def in_thread(target: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(target())
        except Exception as exc:  # reported by the test's assertions
            outcome.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        return cursor.fetchone()[0]


def sweep_paused_in_publish(schedule: RecurringSchedule):
    """A sweep that has claimed the schedule's occurrence and waits at the gate."""
    due = pending(schedule)[0].due_at
    publisher = GatedPublisher()
    thread, outcome = in_thread(
        lambda: sweep(ScheduledOccurrence, now=due + timedelta(seconds=1), publisher=publisher)
    )
    assert publisher.entered.wait(30)
    return publisher, thread, outcome


def finish(publisher: GatedPublisher, *threads: threading.Thread) -> None:
    wait_for(lambda: waiting_on_a_lock() >= 1, timeout=30, interval=0.05)
    publisher.gate.set()
    for thread in threads:
        thread.join(60)
        assert not thread.is_alive(), "deadlocked"


def test_an_edit_racing_the_sweep_leaves_one_pending_occurrence_of_the_new_version(broker):
    schedule = RecurringSchedule.objects.create(name="racy", cron="* * * * * ?", queue="q")
    publisher, sweeper, swept = sweep_paused_in_publish(schedule)

    def edit() -> int:
        row = RecurringSchedule.objects.get(pk=schedule.pk)
        row.cron = "0 0 3 * * ?"
        row.save()
        return row.version

    editor, edited = in_thread(edit)
    finish(publisher, sweeper, editor)

    assert edited == [2]
    assert swept[0].delivered == 1  # claimed before the edit committed: published
    assert len(json_bodies(broker, "q")) == 1
    [next_one] = pending(schedule)
    assert next_one.schedule_version == 2
    assert (next_one.due_at.hour, next_one.due_at.minute) == (3, 0)


def test_a_delete_racing_the_sweep_succeeds_and_leaves_nothing_behind(broker):
    schedule = RecurringSchedule.objects.create(name="doomed", cron="* * * * * ?", queue="q")
    publisher, sweeper, swept = sweep_paused_in_publish(schedule)

    deleter, deleted = in_thread(lambda: RecurringSchedule.objects.get(pk=schedule.pk).delete())
    finish(publisher, sweeper, deleter)

    assert not isinstance(deleted[0], Exception), deleted
    assert swept[0].delivered == 1
    assert ScheduledOccurrence.objects.count() == 0
    assert RecurringSchedule.objects.count() == 0


def test_a_payload_edit_racing_the_sweep_keeps_the_timeline_going(broker):
    schedule = RecurringSchedule.objects.create(name="steady", cron="* * * * * ?", queue="q")
    delivered_due = pending(schedule)[0].due_at
    publisher, sweeper, _swept = sweep_paused_in_publish(schedule)

    def edit() -> int:
        row = RecurringSchedule.objects.get(pk=schedule.pk)
        row.payload_template = {"edited": True}
        row.save()
        return row.version

    editor, edited = in_thread(edit)
    finish(publisher, sweeper, editor)

    # A payload edit is a new version too (the distributed cron's rule): the editor, which
    # held the schedule, inserted the next fire of version 2; the sweep inserted none.
    assert edited == [2]
    [next_one] = pending(schedule)
    assert next_one.schedule_version == 2
    assert next_one.due_at > delivered_due


def test_a_skip_racing_the_sweep_leaves_the_schedule_its_next_occurrence(broker):
    schedule = RecurringSchedule.objects.create(name="skippy", cron="* * * * * ?", queue="q")
    claimed = pending(schedule)[0]
    publisher, sweeper, swept = sweep_paused_in_publish(schedule)

    skipper, skipped = in_thread(lambda: occurrence_skip(occurrence=claimed))
    finish(publisher, sweeper, skipper)

    assert skipped == [False]  # the sweep published it first
    assert swept[0].delivered == 1
    [next_one] = pending(schedule)
    assert next_one.due_at == claimed.due_at + timedelta(seconds=1)
