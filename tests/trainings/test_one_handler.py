"""One handler in the declarative form serves the training reminders whatever their batch size:
`trainings.send_training_reminder` consumes single messages (handler_batch_size = 0) and batches
(100) alike, each reminder pushed once to whoever still has to act."""

import base64
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.delivery.sweep.run import sweep
from tests.conftest import queued_messages
from tests.trainings.factories import PlayerFactory, TeamFactory
from trainings.models import PushNotification, ScheduledTrainingNotification
from trainings.services import training_create
from trainings.tasks import send_training_reminder

pytestmark = pytest.mark.django_db(transaction=True)


def run(message):
    _, kwargs, _ = json.loads(base64.b64decode(message["body"]))
    return send_training_reminder.app.tasks[message["headers"]["task"]](**kwargs)


@pytest.mark.parametrize("size", [0, 100])
def test_the_same_handler_pushes_each_reminder_once_in_single_messages_and_in_batches(
    monkeypatch, broker, size
):
    monkeypatch.setattr(ScheduledTrainingNotification, "handler_batch_size", size)
    team = TeamFactory()
    players = PlayerFactory.create_batch(2, team=team)
    start = timezone.now() + timedelta(minutes=16)
    training = training_create(team=team, start_at=start, end_at=start + timedelta(hours=1))
    soon = timezone.now() + timedelta(minutes=2)
    expected = ScheduledTrainingNotification.objects.filter(
        training=training, due_at__lte=soon
    ).count()
    assert expected > 0
    assert sweep(ScheduledTrainingNotification, now=soon).delivered == expected
    messages = queued_messages(broker, "trainings")
    assert len(messages) == (1 if size else expected)

    for message in [*messages, *messages]:  # each message delivered twice
        run(message)

    handled = ScheduledTrainingNotification.objects.handled().filter(training=training)
    assert handled.count() == expected
    pushes = PushNotification.objects.filter(training=training)
    assert sorted(pushes.values_list("player_id", flat=True)) == sorted(
        player.pk for player in players for _ in range(expected)
    )
