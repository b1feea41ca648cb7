"""The declarative handler (scheduling.handler): one function, a row's effect, serving single
messages and batches; its set-up once a message, its preparation before each row; RetryLater's
next try."""

from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling import RetryLater, handler
from scheduling.delivery.sweep.run import sweep
from tests.scheduling.delivery.test_batches import make_once_rows, make_pings, published_batches
from tests.testapp.models import PingEffect, ScheduledOnce, ScheduledPing
from tests.testapp.tasks import declared_once_ping

pytestmark = pytest.mark.django_db(transaction=True)

opened: list[str] = []


@contextmanager
def connection_for(rows):
    opened.append(f"open {len(rows)}")
    yield {row.pk: row.ping.name for row in rows}
    opened.append("closed")


def refused(row, names):
    if names[row.pk] == "refused":
        raise ConnectionRefusedError("before the effect")


@handler(ScheduledPing, name="tests.handlers.with_setup", setup=connection_for, prepare=refused)
def with_setup(row, names):
    if names[row.pk] == "later":
        raise RetryLater(
            "the service asked to wait", not_before=timezone.now() + timedelta(hours=1)
        )
    PingEffect.objects.create(event_id=row.event_id, ping_id=row.ping_id)
    return names[row.pk]


@pytest.fixture
def declared(monkeypatch):
    opened.clear()
    monkeypatch.setattr(ScheduledPing, "handler_task", "tests.handlers.with_setup")
    return ScheduledPing


@pytest.mark.parametrize("size", [0, 10])
def test_setup_runs_once_a_message_and_is_closed_after_its_last_effect(
    declared, monkeypatch, broker, size
):
    monkeypatch.setattr(ScheduledPing, "handler_batch_size", size)
    make_pings(ScheduledPing, ["a", "b", "c"])
    assert sweep(ScheduledPing).delivered == 3
    messages = published_batches(broker)

    outcomes = [with_setup(events if size else events[0]) for events in messages]

    assert outcomes == (["3 handled, 0 failed, 0 skipped"] if size else ["a", "b", "c"])
    assert opened == (["open 3", "closed"] if size else ["open 1", "closed"] * 3)
    assert PingEffect.objects.count() == 3


def test_a_failed_preparation_is_retried_and_a_retry_later_waits_for_its_time(
    declared, monkeypatch, broker
):
    monkeypatch.setattr(ScheduledPing, "handler_batch_size", 10)
    make_pings(ScheduledPing, ["refused", "later", "ok"])
    assert sweep(ScheduledPing).delivered == 3
    (events,) = published_batches(broker)

    assert with_setup(events) == "1 handled, 2 failed, 0 skipped"

    rows = {row.ping.name: row for row in ScheduledPing.objects.select_related("ping")}
    assert rows["refused"].status == "pending"
    assert "ConnectionRefusedError" in rows["refused"].last_error
    assert rows["later"].status == "pending"
    assert rows["later"].due_at >= timezone.now() + timedelta(minutes=4)  # not its short backoff
    assert rows["ok"].handled_at is not None


def test_retry_later_waits_no_longer_than_the_models_maximum_backoff(declared, broker):
    make_pings(ScheduledPing, ["later"])
    ScheduledPing.retry_backoff_max = 60
    try:
        assert sweep(ScheduledPing).delivered == 1
        (events,) = published_batches(broker)
        with pytest.raises(RetryLater):
            with_setup(events[0])  # a single message raises its row's failure
    finally:
        del ScheduledPing.retry_backoff_max
    row = ScheduledPing.objects.get()
    assert row.due_at <= timezone.now() + timedelta(seconds=61)


@pytest.mark.parametrize("size", [0, 10])
def test_an_at_most_once_effect_that_fails_is_left_for_a_person(monkeypatch, broker, size):
    monkeypatch.setattr(ScheduledOnce, "handler_batch_size", size)
    monkeypatch.setattr(ScheduledOnce, "handler_task", "testapp.declared_once_ping")
    make_once_rows(["fails-during-effect", "ok"])
    assert sweep(ScheduledOnce).delivered == 2
    if size:
        (events,) = published_batches(broker)
        assert declared_once_ping(events) == "1 handled, 1 failed, 0 skipped"
    else:
        first, second = published_batches(broker)
        with pytest.raises(RuntimeError, match="after the effect began"):
            declared_once_ping(first[0])
        assert declared_once_ping(second[0]) == "handled"
    failed = ScheduledOnce.objects.get(ping__name="fails-during-effect")
    assert failed.status == "failed"
    assert "Check, then retry" in failed.last_error
    assert PingEffect.objects.count() == 2  # each effect once, the failed one's included
