"""Batched handling (scheduling.delivery.handling.batches): one message for up to N rows of a model, each row still
handled once (or at most once), a row's failure recorded on that row alone."""

from datetime import timedelta

import pytest
from django.db import DEFAULT_DB_ALIAS, OperationalError, connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduling.delivery.handling.batches import handle_batch
from scheduling.delivery.handling.signals import event_failed
from scheduling.delivery.sweep.run import sweep
from scheduling.delivery.testing import run_due
from scheduling.rows.history.models import EventHistory, Kind
from scheduling.rows.models import ScheduledEvent
from tests.conftest import message_events, queued_messages
from tests.factories import make_due_pings
from tests.testapp.models import Ping, PingEffect, ScheduledOnce, ScheduledPing
from tests.testapp.tasks import handle_once_ping_batch, handle_ping_batch

pytestmark = pytest.mark.django_db

Status = ScheduledEvent.Status
BATCH = 5


@pytest.fixture
def batched(monkeypatch, ping_model):
    """`ping_model` (plain and partitioned) with its events handled in batches of BATCH."""
    monkeypatch.setattr(ping_model, "handler_batch_size", BATCH)
    monkeypatch.setattr(ping_model, "handler_task", "testapp.handle_ping_batch")
    return ping_model


@pytest.fixture
def once_batched(monkeypatch):
    monkeypatch.setattr(ScheduledOnce, "handler_batch_size", BATCH)
    monkeypatch.setattr(ScheduledOnce, "handler_task", "testapp.handle_once_ping_batch")
    return ScheduledOnce


def published_batches(broker, queue="testapp"):
    """Each queued message's events, as lists; the queue emptied."""
    batches = [message_events(message) for message in queued_messages(broker, queue)]
    broker.delete(queue)
    return batches


def make_pings(model, names):
    """Due rows of `model`, one a ping named as given, due in that order."""
    make_due_pings(len(names), model=model)
    rows = model.objects.order_by("due_at")
    for row, name in zip(rows, names, strict=True):
        Ping.objects.filter(pk=row.ping_id).update(name=name)


def rows_by_name(model):
    return {row.ping.name: row for row in model.objects.select_related("ping")}


def test_the_sweep_publishes_one_message_per_batch_of_rows(batched, broker):
    make_due_pings(12, model=batched)

    assert sweep(batched).delivered == 12

    messages = queued_messages(broker, "testapp")
    batches = [message_events(message) for message in messages]
    assert [len(events) for events in batches] == [5, 5, 2]
    assert {message["headers"]["task"] for message in messages} == {"testapp.handle_ping_batch"}
    first = batches[0][0]
    assert messages[0]["headers"]["id"] == f"{first['id']}+4"
    assert set(first) == {"id", "type", "model", "pk", "version", "due_at", "published_at", "data"}


def test_a_batch_is_read_in_one_statement_and_each_row_taken_and_marked_in_one(batched, broker):
    # Before issue 40 the rows stayed locked from that read to one mark of them all, across
    # every effect; now the read commits at once and each row is locked, re-checked and marked
    # handled by one UPDATE in a transaction of its own, with its effect.
    make_due_pings(BATCH, model=batched)
    sweep(batched)
    (events,) = published_batches(broker)

    with CaptureQueriesContext(connection) as queries:
        assert handle_ping_batch(events) == f"handled {BATCH} of {BATCH}"

    sql = [query["sql"] for query in queries.captured_queries]
    assert len([s for s in sql if "FOR UPDATE" in s]) == 1
    marks = [s for s in sql if s.startswith("UPDATE") and "handled_at" in s]
    assert len(marks) == BATCH
    assert all("version = 1" in mark and "handled_at IS NULL" in mark for mark in marks)
    assert batched.objects.filter(handled_at__isnull=False).count() == BATCH
    assert PingEffect.objects.count() == BATCH


def test_rows_cancelled_moved_or_handled_while_the_batch_runs_are_skipped(batched, broker):
    pks = make_due_pings(4, model=batched)
    sweep(batched)
    (events,) = published_batches(broker)
    ran = []

    def effect(row):
        ran.append(row.pk)
        if row.pk == pks[0]:  # while the first row's effect runs
            batched.objects.filter(pk=pks[1]).update(status=Status.CANCELLED)
            batched.objects.filter(pk=pks[2]).update(status=Status.PENDING, version=2)  # moved
            batched.objects.filter(pk=pks[3]).update(handled_at=timezone.now())  # a duplicate

    with handle_batch(events, batched) as batch:
        assert len(batch.rows) == 4
        done = batch.each(effect)

    assert ran == [pks[0]]
    assert list(done) == [pks[0]]
    rows = batched.objects.in_bulk(pks)
    assert (rows[pks[1]].status, rows[pks[1]].handled_at) == (Status.CANCELLED, None)
    assert (rows[pks[2]].version, rows[pks[2]].handled_at) == (2, None)  # not marked after all


def test_a_duplicate_of_a_batch_message_changes_nothing(batched, broker):
    make_due_pings(BATCH, model=batched)
    sweep(batched)
    (events,) = published_batches(broker)
    handle_ping_batch(events)
    handled = dict(batched.objects.values_list("pk", "handled_at"))

    assert handle_ping_batch(events) == f"handled 0 of {BATCH}"

    assert PingEffect.objects.count() == BATCH
    assert dict(batched.objects.values_list("pk", "handled_at")) == handled


def test_rows_moved_cancelled_or_republished_since_are_left_out(batched, broker):
    pks = make_due_pings(4, model=batched)
    sweep(batched)
    (events,) = published_batches(broker)
    batched.objects.filter(pk=pks[0]).update(status=Status.CANCELLED)
    batched.objects.filter(pk=pks[1]).update(status=Status.PENDING, version=2)  # moved
    batched.objects.filter(pk=pks[2]).update(handled_at=timezone.now())  # another delivery

    assert handle_ping_batch(events) == "handled 1 of 4"

    assert list(PingEffect.objects.values_list("ping_id", flat=True)) == list(
        batched.objects.filter(pk=pks[3]).values_list("ping_id", flat=True)
    )


def test_a_row_that_fails_is_recorded_alone_and_the_others_are_handled(batched, broker, settings):
    settings.SCHEDULING_RETRY_BACKOFF = 60
    make_pings(batched, ["a", "fail:1", "b"])
    sweep(batched)
    (events,) = published_batches(broker)
    failed_signals = []
    event_failed.connect(failed := lambda **kw: failed_signals.append(kw), weak=False)
    try:
        started = timezone.now()
        with django_capture_on_commit():
            assert handle_ping_batch(events) == "handled 2 of 3"
    finally:
        event_failed.disconnect(failed)

    rows = rows_by_name(batched)
    assert rows["a"].handled_at is not None
    assert rows["b"].handled_at is not None
    failing = rows["fail:1"]
    assert (failing.status, failing.handled_at, failing.attempts) == (Status.PENDING, None, 1)
    assert "planned failure on try 1" in failing.last_error
    assert failing.due_at >= started + timedelta(seconds=30)  # its backoff, "equal jitter"
    entries = EventHistory.objects.filter(model=batched._meta.label_lower, row_id=failing.pk)
    kinds = entries.values_list("kind", flat=True)
    assert Kind.HANDLING_FAILED in set(kinds)
    assert [kw["row"].pk for kw in failed_signals] == [failing.pk]
    assert PingEffect.objects.count() == 2


def test_a_failure_of_the_whole_batch_is_recorded_on_each_row(batched, broker, settings):
    settings.SCHEDULING_RETRY_BACKOFF = 60
    make_pings(batched, ["a", "whole-batch-fails", "b"])
    sweep(batched)
    (events,) = published_batches(broker)

    with pytest.raises(ConnectionError, match="whole batch"):
        handle_ping_batch(events)

    for row in batched.objects.all():
        assert (row.status, row.handled_at, row.attempts) == (Status.PENDING, None, 1)
        assert "planned failure of the whole batch" in row.last_error
    assert PingEffect.objects.count() == 0


def test_a_batch_retried_after_its_failure_is_handled(batched, broker, settings):
    settings.SCHEDULING_RETRY_BACKOFF = 0
    make_pings(batched, ["a", "fail:1", "b"])

    assert run_due(batched) == 2
    assert run_due(batched, now=timezone.now() + timedelta(seconds=1)) == 1

    assert batched.objects.filter(handled_at__isnull=True).count() == 0
    assert PingEffect.objects.count() == 3


def test_run_due_runs_batch_handlers(batched):
    make_due_pings(7, model=batched)

    assert run_due(batched) == 7
    assert PingEffect.objects.count() == 7


def test_a_batch_handler_refuses_another_models_events(batched, broker):
    make_due_pings(1, model=batched)
    sweep(batched)
    (events,) = published_batches(broker)
    other = ScheduledOnce if batched is ScheduledPing else ScheduledPing

    with pytest.raises(ValueError, match="another model's events"):
        handle_batch(events, other).__enter__()


def test_rate_limits_count_rows_not_messages(batched, broker, settings):
    settings.SCHEDULING_RATE_LIMITS = {batched._meta.label: "100/s"}  # a burst of 10 rows
    make_due_pings(30, model=batched)

    first = sweep(batched, time_budget=0.001)  # one burst; the next comes too late for it

    assert first.delivered == 10
    assert [len(events) for events in published_batches(broker)] == [5, 5]


# --- at most once ---------------------------------------------------------------------------
# The effect is written on a connection of its own (beyond any rollback): the rows must commit.


@pytest.mark.django_db(transaction=True)
def test_at_most_once_each_effect_runs_once_and_the_rows_are_handled(once_batched, broker):
    make_once_rows(["a", "b", "c"])
    sweep(once_batched)
    (events,) = published_batches(broker)

    assert handle_once_ping_batch(events) == "handled 3 of 3"
    assert handle_once_ping_batch(events) == "handled 0 of 3"

    assert PingEffect.objects.count() == 3
    assert once_batched.objects.filter(handled_at__isnull=False).count() == 3


@pytest.mark.django_db(transaction=True)
def test_at_most_once_a_failure_during_an_effect_leaves_that_row_alone_for_a_person(
    once_batched, broker
):
    make_once_rows(["a", "fails-during-effect", "b"])
    sweep(once_batched)
    (events,) = published_batches(broker)

    assert handle_once_ping_batch(events) == "handled 2 of 3"

    rows = rows_by_name(once_batched)
    assert rows["a"].handled_at is not None
    assert rows["b"].handled_at is not None
    failed = rows["fails-during-effect"]
    assert failed.status == Status.FAILED
    assert "Check, then retry" in failed.last_error
    assert PingEffect.objects.count() == 3  # the failing effect had happened: not repeated


@pytest.mark.django_db(transaction=True)
def test_at_most_once_a_failure_before_the_effect_is_retried(once_batched, broker, settings):
    settings.SCHEDULING_RETRY_BACKOFF = 60
    make_once_rows(["a", "refused:1"])
    sweep(once_batched)
    (events,) = published_batches(broker)

    assert handle_once_ping_batch(events) == "handled 1 of 2"

    refused = rows_by_name(once_batched)["refused:1"]
    assert (refused.status, refused.effect_started_at, refused.attempts) == (
        Status.PENDING,
        None,
        1,
    )
    assert PingEffect.objects.count() == 1


def make_once_rows(names):
    now = timezone.now()
    pings = Ping.objects.bulk_create(Ping(name=name) for name in names)
    ScheduledOnce.objects.bulk_create(
        ScheduledOnce(ping=ping, due_at=now - timedelta(minutes=1, microseconds=-i))
        for i, ping in enumerate(pings)
    )


class django_capture_on_commit:
    """Runs the on_commit callbacks (signals) of what commits inside, as a worker's would."""

    def __enter__(self):
        from django.test import TestCase

        self.context = TestCase.captureOnCommitCallbacks(execute=True)
        return self.context.__enter__()

    def __exit__(self, *exc):
        return self.context.__exit__(*exc)


@pytest.mark.django_db(transaction=True)
def test_at_most_once_no_more_than_one_row_is_ever_in_flight(once_batched, broker):
    make_once_rows(["a", "b", "c", "d"])
    sweep(once_batched)
    (events,) = published_batches(broker)
    seen = []

    def effect(row):
        in_flight = once_batched.objects.filter(
            effect_started_at__isnull=False, handled_at__isnull=True
        )
        seen.append(list(in_flight.values_list("pk", flat=True)))

    with handle_batch(events, once_batched) as batch:
        batch.each(effect)

    assert [pks for pks in seen] == [[event["pk"]] for event in events]
    assert once_batched.objects.filter(handled_at__isnull=True).count() == 0


def test_a_lost_batch_message_is_published_again_after_the_handling_timeout(
    batched, broker, settings
):
    settings.SCHEDULING_HANDLING_TIMEOUT = 60
    make_due_pings(3, model=batched)
    sweep(batched)
    published_batches(broker)  # the broker lost it
    long_ago = timezone.now() - timedelta(minutes=5)
    batched.objects.update(delivered_at=long_ago)

    result = sweep(batched)

    assert (result.requeued, result.delivered) == (3, 3)
    (events,) = published_batches(broker)
    assert handle_ping_batch(events) == "handled 3 of 3"
    assert batched.objects.filter(handled_at__isnull=True).count() == 0


@pytest.mark.django_db(transaction=True)
def test_no_row_of_the_batch_is_locked_beyond_the_one_whose_effect_runs(batched, broker):
    """What a cancel or reschedule from another connection meets while a batch runs: only the
    row under way is locked (NOWAIT fails on it alone); the rows done and to come are free."""
    pks = make_due_pings(4, model=batched)
    sweep(batched)
    (events,) = published_batches(broker)
    table = batched._meta.db_table
    other = connections.create_connection(DEFAULT_DB_ALIAS)
    locked_seen = {}

    def lockable(pk):
        with other.cursor() as cursor:
            try:
                cursor.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR UPDATE NOWAIT", [pk])
                return True
            except OperationalError:  # lock not available
                return False
            finally:
                other.rollback()

    def effect(row):
        locked_seen[row.pk] = [pk for pk in pks if not lockable(pk)]

    try:
        other.set_autocommit(False)
        with handle_batch(events, batched) as batch:
            batch.each(effect)
    finally:
        other.close()

    assert locked_seen == {pk: [pk] for pk in pks}
    assert batched.objects.filter(handled_at__isnull=True).count() == 0
