"""A batch of reminders held up by a slow push service holds up no training's cancel.

The batch handler takes one reminder at a time, each in a transaction of its own (its row, then
its training, locked for that reminder's pushes only), so a training_cancel from another
connection waits for one reminder's pushes at most, and nothing is pushed for its training once
it has committed. Before issue 40 the batch kept every row and training locked until its last
push: a cancel waited for the whole batch, then the cancelled training's reminder went out.

The push results are written on a second connection, which sees only committed rows: the test
commits (`transaction=True`).
"""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from scheduling.delivery.sweep.run import sweep
from scheduling.rows.models import ScheduledEvent
from tests.conftest import message_events, queued_messages, wait_for
from tests.trainings.factories import PlayerFactory, TeamFactory
from tests.trainings.fake_fcm import FakeFcm
from tests.trainings.test_push_http import push_settings
from trainings.models import ScheduledTrainingNotification, Training
from trainings.push.results import close_results_connection
from trainings.services import training_cancel, training_create
from trainings.tasks import send_training_reminder

pytestmark = pytest.mark.django_db(transaction=True)

Status = ScheduledEvent.Status
TRAININGS = 5
PLAYERS = 3  # a training's reminder is PLAYERS pushes, one request each
DELAY = 0.2  # seconds the fake service takes to answer each push, well inside the timeout


@pytest.fixture
def slow_fcm(settings):
    server = FakeFcm().start()
    server.delay = DELAY
    for name, value in push_settings(server.url).items():
        setattr(settings, name, float(value) if "TIMEOUT" in name else value)
    settings.TRAININGS_PUSH_TIMEOUT = 10.0  # the default: the delay is no timeout
    yield server
    close_results_connection()
    server.stop()


def trainings_with_reminders_due():
    """TRAININGS trainings, each of its own team of PLAYERS players with push tokens
    ("t<i>-p<j>"), whose -90 minute reminders are published together in one batch message; the
    trainings and that message's events."""
    start = timezone.now() + timedelta(hours=2)
    trainings = []
    for i in range(TRAININGS):
        team = TeamFactory(name=f"team {i}")
        for j in range(PLAYERS):
            PlayerFactory(team=team, name=f"p{j}", push_token=f"t{i}-p{j}")
        at = start + timedelta(seconds=10 * i)
        trainings.append(training_create(team=team, start_at=at, end_at=at + timedelta(hours=1)))
    return trainings


def published_batch(broker, trainings):
    sweep(ScheduledTrainingNotification, now=trainings[-1].start_at - timedelta(minutes=89))
    (message,) = queued_messages(broker, "trainings")
    broker.delete("trainings")
    return message_events(message)


def tokens_of(index):
    return {f"t{index}-p{j}" for j in range(PLAYERS)}


def test_a_cancel_returns_before_a_slow_batch_ends_and_nothing_is_pushed_after_it(slow_fcm, broker):
    trainings = trainings_with_reminders_due()
    events = published_batch(broker, trainings)
    assert len(events) == TRAININGS
    outcome = []

    def handle_batch_elsewhere():
        try:
            outcome.append(send_training_reminder(events))
        finally:
            close_results_connection()
            connection.close()

    handler = threading.Thread(target=handle_batch_elsewhere)
    handler.start()
    try:
        # The first reminder's pushes are under way, its row and training locked.
        wait_for(lambda: slow_fcm.arrived, timeout=60, interval=0.01)
        cancelled = concurrent_cancels([trainings[0], trainings[-1]])
        # Both cancels committed while the batch still had reminders to push.
        assert handler.is_alive()
        pushed_before = list(slow_fcm.arrived)
    finally:
        handler.join(timeout=120)

    assert not handler.is_alive()
    assert set(cancelled) == {trainings[0].pk, trainings[-1].pk}  # each returned
    after = slow_fcm.arrived[len(pushed_before) :]
    assert not (set(after) & (tokens_of(0) | tokens_of(TRAININGS - 1)))
    assert not (set(slow_fcm.arrived) & tokens_of(TRAININGS - 1))  # its reminder came later
    for i in range(1, TRAININGS - 1):  # the trainings not cancelled got their reminder
        assert {token for token in slow_fcm.arrived if token in tokens_of(i)} == tokens_of(i)
    assert outcome == ["5 handled, 0 failed, 0 skipped"]  # the cancelled ones pushed nothing
    rows = ScheduledTrainingNotification.objects.filter(pk__in=[e["pk"] for e in events])
    assert {(row.status, row.handled_at is not None) for row in rows} == {(Status.DELIVERED, True)}
    assert Training.objects.filter(cancelled_at__isnull=False).count() == 2


def concurrent_cancels(trainings):
    """training_cancel of each, each from a thread with its own connection; {pk: cancelled}."""
    done = {}

    def cancel(training):
        try:
            done[training.pk] = training_cancel(training=training)
        finally:
            connection.close()

    threads = [threading.Thread(target=cancel, args=(t,)) for t in trainings]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return done
