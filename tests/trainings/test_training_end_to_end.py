from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.delivery.sweep.run import sweep
from scheduling.rows.models import ScheduledEvent
from tests.conftest import wait_for
from trainings.kinds import NotificationKind, Phase
from trainings.models import PushNotification, ScheduledTrainingNotification
from trainings.services import questionnaire_answer, training_create

Status = ScheduledEvent.Status
PRE = NotificationKind.PRE_QUESTIONNAIRE


def pushes_count(expected):
    return lambda: PushNotification.objects.count() == expected


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_player_who_answers_between_two_rungs_gets_only_the_earlier_reminders(
    team, players, trainings_worker
):
    # The sweep's `now` stands in for the passing minutes; the worker runs on the real clock,
    # which is well before the start, so nothing it handles has expired.
    start = timezone.now() + timedelta(hours=2)
    training = training_create(team=team, start_at=start, end_at=start + timedelta(hours=1))

    first = sweep(ScheduledTrainingNotification, now=start - timedelta(minutes=75))
    assert first.delivered == 2  # the -90 and -75 minute rungs
    wait_for(pushes_count(6))

    questionnaire_answer(training=training, player=players[0], phase=Phase.PRE)
    second = sweep(ScheduledTrainingNotification, now=start - timedelta(minutes=60))
    assert second.delivered == 1
    wait_for(pushes_count(8))

    assert PushNotification.objects.filter(player=players[0], kind=PRE).count() == 2
    for player in players[1:]:
        assert PushNotification.objects.filter(player=player, kind=PRE).count() == 3
    delivered = ScheduledTrainingNotification.objects.filter(status=Status.DELIVERED)
    assert delivered.count() == 3
    wait_for(lambda: not delivered.filter(handled_at__isnull=True).exists())
    event_ids = set(PushNotification.objects.values_list("event_id", flat=True))
    assert event_ids == {row.event_id for row in delivered}
