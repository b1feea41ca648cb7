from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from scheduling.rows.models import ScheduledEvent
from tests.conftest import CURRENT_TIME
from tests.trainings.factories import PlayerFactory, TeamFactory
from trainings.kinds import InvitationStatus, NotificationKind, Phase
from trainings.models import (
    Invitation,
    QuestionnaireAnswer,
    ScheduledTrainingNotification,
    Training,
)
from trainings.services import (
    MOVED_INTO_THE_PAST,
    invitation_reply,
    questionnaire_answer,
    training_cancel,
    training_create,
    training_create_many,
    training_move,
)

pytestmark = pytest.mark.django_db

Status = ScheduledEvent.Status
PRE, POST, INVITATION = NotificationKind
START = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
END = START + timedelta(hours=1, minutes=30)


def rows(training):
    return ScheduledTrainingNotification.objects.filter(training=training)


def anchored(row, training):
    return (training.end_at if row.kind == POST else training.start_at) + row.offset


@pytest.fixture
def training(team, players, frozen):
    return training_create(team=team, start_at=START, end_at=END, invitations_enabled=True)


def test_create_invites_every_player_of_the_team(training, players):
    invited = Invitation.objects.filter(training=training)

    assert sorted(i.player_id for i in invited) == sorted(p.pk for p in players)
    assert {i.status for i in invited} == {InvitationStatus.PENDING}


def test_create_without_invitations_schedules_questionnaires_only(team, players, frozen):
    training = training_create(team=team, start_at=START, end_at=END)

    assert set(rows(training).values_list("kind", flat=True)) == {PRE, POST}
    assert rows(training).count() == 18
    assert not Invitation.objects.filter(training=training).exists()


def test_create_refuses_an_end_before_the_start_or_naive_times(team):
    with pytest.raises(ValidationError) as error:
        training_create(team=team, start_at=START, end_at=START)
    assert "end_at" in error.value.message_dict

    with pytest.raises(ValueError, match="start_at must be timezone-aware"):
        training_create(team=team, start_at=START.replace(tzinfo=None), end_at=END)


def test_move_recomputes_every_pending_row_from_its_offset(training):
    new_start = START + timedelta(days=2, hours=3)
    new_end = new_start + timedelta(hours=2)

    moved = training_move(training=training, start_at=new_start, end_at=new_end)

    assert moved == 22
    training.refresh_from_db()
    assert (training.start_at, training.end_at) == (new_start, new_end)
    for row in rows(training):
        assert row.due_at == anchored(row, training)
        assert (row.status, row.version) == (Status.PENDING, 2)


def test_move_leaves_non_pending_rows_alone(training):
    delivered = rows(training).get(kind=INVITATION, offset=timedelta(days=-3))
    rows(training).filter(pk=delivered.pk).update(status=Status.DELIVERED)
    cancelled = rows(training).get(kind=PRE, offset=timedelta(minutes=-90))
    rows(training).filter(pk=cancelled.pk).cancel("by hand")

    moved = training_move(
        training=training, start_at=START + timedelta(hours=1), end_at=END + timedelta(hours=1)
    )

    assert moved == 20
    for untouched in (delivered, cancelled):
        after = ScheduledTrainingNotification.objects.get(pk=untouched.pk)
        assert (after.due_at, after.version) == (untouched.due_at, 1)


def test_moving_only_the_end_moves_only_post_rows(training):
    moved = training_move(training=training, start_at=START, end_at=END + timedelta(minutes=30))

    assert moved == 12
    assert set(rows(training).filter(version=2).values_list("kind", flat=True)) == {POST}


def test_a_move_is_one_update_for_the_rows(training, django_assert_max_num_queries):
    # row locks + training lock + training update + row update + the moved rows read back for
    # quiet hours + backfill check and insert, inside one transaction
    with django_assert_max_num_queries(8):
        training_move(
            training=training, start_at=START + timedelta(days=1), end_at=END + timedelta(days=1)
        )


def test_rungs_a_move_puts_in_the_past_are_cancelled_not_sent(training, frozen):
    frozen.move_to(START - timedelta(hours=2))
    new_start = CURRENT_TIME.replace(2026, 12, 1, 16, 40)  # 40 minutes from now

    training_move(training=training, start_at=new_start, end_at=new_start + timedelta(hours=1))

    pre = rows(training).filter(kind=PRE)
    assert set(pre.pending().values_list("offset", flat=True)) == {
        timedelta(minutes=-30),
        timedelta(minutes=-15),
    }
    past = pre.exclude(status=Status.PENDING)
    assert {(r.status, r.cancel_reason) for r in past} == {(Status.CANCELLED, MOVED_INTO_THE_PAST)}
    assert rows(training).filter(kind=INVITATION, status=Status.PENDING).count() == 0


def test_rungs_a_move_cancelled_come_back_when_a_later_move_puts_them_in_the_future(
    training, frozen
):
    frozen.move_to(START - timedelta(hours=2))
    earlier = START - timedelta(hours=1, minutes=20)  # 40 minutes from now
    training_move(training=training, start_at=earlier, end_at=earlier + timedelta(hours=1))
    assert rows(training).filter(cancel_reason=MOVED_INTO_THE_PAST).count() == 8

    training_move(training=training, start_at=START, end_at=END)

    training.refresh_from_db()
    for row in rows(training).exclude(kind=INVITATION):  # invitations are in the past still
        assert (row.status, row.due_at) == (Status.PENDING, anchored(row, training))
        assert (row.cancelled_at, row.cancel_reason) == (None, "")
    revived = rows(training).filter(kind=PRE, offset__lte=timedelta(minutes=-45))
    assert set(revived.values_list("version", flat=True)) == {3}
    assert set(rows(training).filter(kind=INVITATION).values_list("status", flat=True)) == {
        Status.CANCELLED
    }


def test_a_move_of_a_cancelled_training_revives_nothing(training, frozen):
    frozen.move_to(START - timedelta(hours=2))
    earlier = START - timedelta(hours=1, minutes=20)
    training_move(training=training, start_at=earlier, end_at=earlier + timedelta(hours=1))
    training_cancel(training=training)

    training_move(training=training, start_at=START, end_at=END)

    assert not rows(training).pending().exists()


def test_moving_a_late_created_training_later_adds_the_rungs_it_never_had(team, frozen):
    start = CURRENT_TIME + timedelta(minutes=20)
    training = training_create(team=team, start_at=start, end_at=start + timedelta(hours=1))
    assert rows(training).filter(kind=PRE).count() == 1

    later = start + timedelta(days=1)
    training_move(training=training, start_at=later, end_at=later + timedelta(hours=1))

    pre = rows(training).filter(kind=PRE)
    assert pre.count() == 6
    assert all(row.due_at == anchored(row, training) for row in pre)


def test_cancel_cancels_pending_rows_and_marks_the_training(training):
    rows(training).filter(kind=INVITATION, offset=timedelta(days=-3)).update(
        status=Status.DELIVERED
    )

    assert training_cancel(training=training) == 21
    assert training.cancelled_at is not None
    assert rows(training).filter(status=Status.CANCELLED).count() == 21
    assert rows(training).filter(status=Status.DELIVERED).count() == 1
    assert training_cancel(training=training) == 0


def test_moving_a_cancelled_training_schedules_nothing(training):
    training_cancel(training=training)

    training_move(
        training=training, start_at=START + timedelta(days=1), end_at=END + timedelta(days=1)
    )

    assert not rows(training).pending().exists()


def test_deleting_a_training_deletes_its_rows(training):
    training_id = training.pk

    training.delete()

    assert not ScheduledTrainingNotification.objects.filter(training_id=training_id).exists()


def test_answering_records_one_answer_per_phase(training, players):
    first = questionnaire_answer(training=training, player=players[0], phase=Phase.PRE)
    again = questionnaire_answer(training=training, player=players[0], phase=Phase.PRE)
    questionnaire_answer(training=training, player=players[0], phase=Phase.POST)

    assert again.pk == first.pk
    assert QuestionnaireAnswer.objects.filter(training=training).count() == 2


def test_answering_refuses_a_player_of_another_team_or_an_unknown_phase(training, players):
    stranger = PlayerFactory(team=TeamFactory())

    with pytest.raises(ValidationError) as error:
        questionnaire_answer(training=training, player=stranger, phase=Phase.PRE)
    assert "player" in error.value.message_dict
    with pytest.raises(ValidationError) as error:
        questionnaire_answer(training=training, player=players[0], phase="during")
    assert "phase" in error.value.message_dict


def test_replying_to_an_invitation(training):
    invitation = Invitation.objects.filter(training=training).first()

    invitation_reply(invitation=invitation, status=InvitationStatus.ACCEPTED)

    invitation.refresh_from_db()
    assert invitation.status == InvitationStatus.ACCEPTED
    assert invitation.replied_at == CURRENT_TIME
    with pytest.raises(ValidationError) as error:
        invitation_reply(invitation=invitation, status=InvitationStatus.PENDING)
    assert "status" in error.value.message_dict


def test_a_framework_shift_still_works_on_training_rows(training):
    # Business code can also use the generic QuerySet, joining on any field.
    before = dict(rows(training).values_list("pk", "due_at"))

    assert rows(training).filter(training__team__name="Falcons").shift(timedelta(hours=1)) == 22

    after = dict(rows(training).values_list("pk", "due_at"))
    assert all(after[pk] == due + timedelta(hours=1) for pk, due in before.items())


def test_creating_many_trainings_at_once_schedules_the_same_ladders(team, players, frozen):
    soon = CURRENT_TIME + timedelta(minutes=50)
    times = [(START, END), (START + timedelta(days=7), END + timedelta(days=7)), (soon, END)]

    trainings = training_create_many(team=team, times=times, invitations_enabled=True)

    assert [rows(t).count() for t in trainings] == [22, 22, 3 + 12]
    single = training_create(team=team, start_at=START, end_at=END, invitations_enabled=True)
    ladder = sorted(rows(single).values_list("kind", "offset", "due_at"))
    assert sorted(rows(trainings[0]).values_list("kind", "offset", "due_at")) == ladder
    assert Invitation.objects.filter(training__in=trainings).count() == 9


def test_creating_many_refuses_any_bad_pair_before_writing(team):
    with pytest.raises(ValidationError):
        training_create_many(team=team, times=[(START, END), (END, START)])

    assert not ScheduledTrainingNotification.objects.exists()


def test_creating_many_trainings_from_no_times_creates_nothing(team, players):
    assert training_create_many(team=team, times=[], invitations_enabled=True) == []
    assert not Training.objects.exists()


def test_a_move_across_a_dst_change_keeps_every_rung_at_its_exact_offset(team, players, frozen):
    paris = ZoneInfo("Europe/Paris")
    before = datetime(2027, 10, 29, 18, 0, tzinfo=paris)  # summer time, UTC+2
    after = datetime(2027, 11, 1, 18, 0, tzinfo=paris)  # winter time from the 31st, UTC+1
    training = training_create(
        team=team, start_at=before, end_at=before + timedelta(hours=1), invitations_enabled=True
    )

    # Django's sessions run in UTC; the move's SQL must give the same in a Paris session.
    session_time_zone("Europe/Paris")
    training_move(training=training, start_at=after, end_at=after + timedelta(hours=1))
    session_time_zone("UTC")  # Django reads timestamps as UTC

    training.refresh_from_db()
    for row in rows(training):
        assert row.status == Status.PENDING
        assert row.due_at == anchored(row, training)
    three_days = rows(training).get(kind=INVITATION, offset=timedelta(days=-3))
    assert three_days.due_at == datetime(2027, 10, 29, 17, 0, tzinfo=UTC)  # 19:00 in Paris


def session_time_zone(name):
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL TIME ZONE %s", [name])
