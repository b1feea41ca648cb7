import logging
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.test import override_settings

from scheduling.delivery.sweep.run import sweep
from scheduling.delivery.tasks import EventHandlerTask
from scheduling.delivery.testing import run_due as run_due_here
from scheduling.rows.models import ScheduledEvent
from tests.conftest import message_events, queued_events, queued_messages
from trainings.kinds import InvitationStatus, NotificationKind, Phase
from trainings.models import Invitation, PushNotification, ScheduledTrainingNotification
from trainings.push import Push, get_push_backend
from trainings.services import (
    invitation_reply,
    questionnaire_answer,
    training_cancel,
    training_create,
    training_move,
)
from trainings.tasks import send_training_reminder

pytestmark = pytest.mark.django_db

Status = ScheduledEvent.Status
PRE, POST, INVITATION = NotificationKind
START = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
END = START + timedelta(hours=1)


@pytest.fixture
def training(team, players, frozen):
    return training_create(team=team, start_at=START, end_at=END)


@pytest.fixture
def invited(team, players, frozen):
    """A training with attendance invitations and no questionnaires."""
    return training_create(
        team=team,
        start_at=START,
        end_at=END,
        questionnaires_enabled=False,
        invitations_enabled=True,
    )


@pytest.fixture
def run_due(broker, frozen):
    """Travel to `at`, sweep what is due, and hand every published event to the handler."""

    def run(at):
        frozen.move_to(at)
        sweep(ScheduledTrainingNotification, now=at)
        events = queued_events(broker, "trainings")
        broker.delete("trainings")
        return [send_training_reminder(event) for event in events]

    return run


def event_of(message):
    (event,) = message_events(message)
    return event


def pushes(player=None, kind=None):
    selection = PushNotification.objects.all()
    if player is not None:
        selection = selection.filter(player=player)
    if kind is not None:
        selection = selection.filter(kind=kind)
    return selection.count()


def test_a_reminder_goes_to_every_player_who_has_not_answered(training, players, run_due):
    questionnaire_answer(training=training, player=players[0], phase=Phase.PRE)

    assert run_due(START - timedelta(minutes=90)) == ["sent 2"]

    assert pushes(players[0]) == 0
    assert pushes(players[1], PRE) == pushes(players[2], PRE) == 1
    push = PushNotification.objects.filter(player=players[1]).get()
    assert push.title == "Questionnaire before your training"
    assert "90 minutes" in push.body
    assert push.event_id.startswith("trainings.scheduledtrainingnotification:")


def test_a_player_answering_after_the_75_minute_reminder_gets_no_later_ones(
    training, players, run_due
):
    run_due(START - timedelta(minutes=75))  # the -90 and -75 rungs
    questionnaire_answer(training=training, player=players[0], phase=Phase.PRE)
    for minutes in (60, 45, 30, 15):
        run_due(START - timedelta(minutes=minutes))

    assert pushes(players[0], PRE) == 2
    assert pushes(players[1], PRE) == 6


def test_post_reminders_skip_players_who_answered_after_the_training(training, players, run_due):
    questionnaire_answer(training=training, player=players[2], phase=Phase.POST)
    questionnaire_answer(training=training, player=players[1], phase=Phase.PRE)

    assert run_due(END + timedelta(minutes=15)) == ["sent 2"]
    assert pushes(players[2], POST) == 0
    assert pushes(players[1], POST) == 1


def test_invitation_reminders_go_to_players_whose_invitation_is_pending(invited, players, run_due):
    invitation = Invitation.objects.get(training=invited, player=players[0])
    invitation_reply(invitation=invitation, status=InvitationStatus.DENIED)

    assert run_due(START - timedelta(days=3)) == ["sent 2"]
    assert pushes(players[0]) == 0
    assert PushNotification.objects.filter(kind=INVITATION).first().title == "Will you attend?"


def test_pre_and_invitation_reminders_expire_at_the_start(training, invited, broker, frozen):
    frozen.move_to(START + timedelta(seconds=1))

    result = sweep(ScheduledTrainingNotification, now=START + timedelta(seconds=1))

    assert (result.delivered, result.expired) == (0, 10)
    expired = ScheduledTrainingNotification.objects.filter(status=Status.EXPIRED)
    assert set(expired.values_list("kind", flat=True)) == {PRE, INVITATION}
    assert broker.llen("trainings") == 0


def test_post_reminders_expire_four_hours_after_their_due_time(training, frozen):
    first_due = END + timedelta(minutes=15)
    at = first_due + timedelta(hours=4, seconds=1)
    frozen.move_to(at)

    result = sweep(ScheduledTrainingNotification, now=at)

    post = ScheduledTrainingNotification.objects.filter(kind=POST)
    assert set(post.filter(status=Status.EXPIRED).values_list("due_at", flat=True)) == {first_due}
    assert result.delivered == 11


def test_handling_is_idempotent_on_the_event_id(training, players, run_due, broker, frozen):
    frozen.move_to(START - timedelta(minutes=90))
    sweep(ScheduledTrainingNotification, now=START - timedelta(minutes=90))
    (message,) = queued_messages(broker, "trainings")

    assert send_training_reminder(event_of(message)) == "sent 3"
    assert send_training_reminder(event_of(message)) == "skipped"
    assert pushes() == 3


def test_a_stale_version_is_skipped(training, broker, frozen):
    frozen.move_to(START - timedelta(minutes=90))
    sweep(ScheduledTrainingNotification, now=START - timedelta(minutes=90))
    (message,) = queued_messages(broker, "trainings")
    stale = {**event_of(message), "version": 0}

    assert send_training_reminder(stale) == "skipped"
    assert pushes() == 0


def test_a_reminder_delivered_before_a_cancel_sends_nothing(training, broker, frozen):
    frozen.move_to(START - timedelta(minutes=90))
    sweep(ScheduledTrainingNotification, now=START - timedelta(minutes=90))
    (message,) = queued_messages(broker, "trainings")
    training_cancel(training=training)

    assert send_training_reminder(event_of(message)) == "sent 0"
    assert pushes() == 0


def test_a_reminder_handled_after_its_expiry_sends_nothing(training, broker, frozen):
    frozen.move_to(START - timedelta(minutes=15))
    sweep(ScheduledTrainingNotification, now=START - timedelta(minutes=15))
    events = queued_events(broker, "trainings")
    frozen.move_to(START + timedelta(minutes=1))  # the queue was busy

    assert {send_training_reminder(event) for event in events} == {"sent 0"}
    assert pushes() == 0


def test_a_deleted_training_skips_its_delivered_reminders(training, broker, frozen):
    frozen.move_to(START - timedelta(minutes=90))
    sweep(ScheduledTrainingNotification, now=START - timedelta(minutes=90))
    (message,) = queued_messages(broker, "trainings")
    training.delete()

    assert send_training_reminder(event_of(message)) == "skipped"


def test_a_moved_training_reminds_at_the_new_times(training, players, run_due):
    training_move(
        training=training, start_at=START + timedelta(hours=2), end_at=END + timedelta(hours=2)
    )

    assert run_due(START - timedelta(minutes=15)) == []
    assert run_due(START + timedelta(minutes=30)) == ["sent 3"]  # new start - 90 minutes


@override_settings(TRAININGS_PUSH_BACKEND="trainings.push.LoggingPushBackend")
def test_the_logging_backend_logs_instead_of_recording(training, run_due, caplog):
    with caplog.at_level(logging.INFO, logger="trainings.push"):
        assert run_due(START - timedelta(minutes=90)) == ["sent 3"]

    assert pushes() == 0
    assert len([r for r in caplog.records if r.name == "trainings.push"]) == 3


@override_settings(TRAININGS_PUSH_BACKEND="trainings.push.CarrierPigeon")
def test_an_unknown_backend_is_refused_with_the_setting_named():
    with pytest.raises(ImproperlyConfigured, match="TRAININGS_PUSH_BACKEND"):
        get_push_backend()


class DownPushBackend:
    """A push service that is down: every send fails."""

    def send(self, pushes: list[Push]) -> None:
        raise ConnectionError("push service unavailable")


def test_the_handler_survives_worker_loss():
    assert isinstance(send_training_reminder, EventHandlerTask)
    assert send_training_reminder.acks_late
    assert send_training_reminder.reject_on_worker_lost


def test_a_failed_push_is_recorded_and_the_sweep_delivers_it_again(
    training, broker, frozen, settings
):
    frozen.move_to(START - timedelta(minutes=90))
    sweep(ScheduledTrainingNotification, now=START - timedelta(minutes=90))
    (message,) = queued_messages(broker, "trainings")
    settings.TRAININGS_PUSH_BACKEND = "tests.trainings.test_tasks.DownPushBackend"

    with pytest.raises(ConnectionError):
        send_training_reminder(event_of(message))

    row = ScheduledTrainingNotification.objects.get(pk=event_of(message)["pk"])
    assert (row.status, row.handled_at) == (Status.PENDING, None)
    assert row.last_error == "ConnectionError: push service unavailable"
    assert pushes() == 0

    settings.TRAININGS_PUSH_BACKEND = "trainings.push.RecordingPushBackend"
    broker.delete("trainings")
    sweep(ScheduledTrainingNotification, now=row.due_at)
    (again,) = queued_messages(broker, "trainings")
    assert event_of(again)["id"] == event_of(message)["id"]
    assert send_training_reminder(event_of(again)) == "sent 3"
    assert pushes() == 3


@pytest.mark.django_db(transaction=True)
def test_a_cancel_in_progress_holds_the_handler_until_it_commits(team, players, broker, frozen):
    training = training_create(team=team, start_at=START, end_at=END)
    frozen.move_to(START - timedelta(minutes=90))
    sweep(ScheduledTrainingNotification, now=START - timedelta(minutes=90))
    (message,) = queued_messages(broker, "trainings")
    results = []

    def handle():
        try:
            results.append(send_training_reminder(event_of(message)))
        finally:
            connection.close()

    handler = threading.Thread(target=handle)
    with transaction.atomic():
        training_cancel(training=training)
        handler.start()
        handler.join(timeout=1)
        assert handler.is_alive()  # waiting for the cancel to commit or roll back
    handler.join(timeout=10)

    assert results == ["sent 0"]
    assert pushes() == 0


def test_the_batch_handler_sends_each_reminder_to_whoever_still_has_to_act(team, players, frozen):
    """The batch task (the model's handler) reads the batch's recipients up front, then sends
    each reminder in its own transaction: the same people as the single-event task."""
    training = training_create(team=team, start_at=START, end_at=END, invitations_enabled=True)
    questionnaire_answer(training=training, player=players[0], phase=Phase.PRE)
    accepted = Invitation.objects.get(training=training, player=players[1])
    invitation_reply(invitation=accepted, status=InvitationStatus.ACCEPTED)
    frozen.move_to(START - timedelta(minutes=90))

    assert run_due_here(ScheduledTrainingNotification) >= 2  # the -90 rung and invitation rungs

    def players_pushed(kind):
        return set(PushNotification.objects.filter(kind=kind).values_list("player", flat=True))

    assert players_pushed(PRE) == {players[1].pk, players[2].pk}
    assert players_pushed(INVITATION) == {players[0].pk, players[2].pk}
