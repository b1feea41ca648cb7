from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from scheduling.rows.models import ScheduledEvent
from tests.conftest import CURRENT_TIME
from trainings.kinds import NotificationKind
from trainings.ladder import enabled_kinds, expiry, future_rungs
from trainings.models import ScheduledTrainingNotification
from trainings.services import training_create

Status = ScheduledEvent.Status
PRE, POST, INVITATION = NotificationKind
START = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
END = datetime(2026, 12, 1, 19, 30, tzinfo=UTC)
ALL_KINDS = enabled_kinds(questionnaires=True, invitations=True)


def minutes(*values):
    return [timedelta(minutes=value) for value in values]


def ladder_of(training):
    rows = ScheduledTrainingNotification.objects.filter(training=training).order_by("due_at")
    return [(row.kind, row.offset, row.due_at) for row in rows]


def test_the_ladder_has_exact_offsets_from_start_and_end():
    rungs = future_rungs(start_at=START, end_at=END, kinds=ALL_KINDS, now=CURRENT_TIME)

    by_kind = {kind: [r.offset for r in rungs if r.kind == kind] for kind in NotificationKind}
    assert by_kind[PRE] == minutes(-90, -75, -60, -45, -30, -15)
    assert by_kind[POST] == minutes(*range(15, 181, 15))
    assert by_kind[INVITATION] == [
        timedelta(days=-3),
        timedelta(days=-2),
        timedelta(days=-1),
        timedelta(hours=-6),
    ]
    assert len(rungs) == 22
    for rung in rungs:
        anchor = END if rung.kind == POST else START
        assert rung.due_at == anchor + rung.offset


def test_rungs_at_or_before_now_are_left_out():
    now = START - timedelta(minutes=45)

    rungs = future_rungs(start_at=START, end_at=END, kinds=ALL_KINDS, now=now)

    assert [r.offset for r in rungs if r.kind == PRE] == minutes(-30, -15)
    assert [r.kind for r in rungs].count(INVITATION) == 0
    assert [r.kind for r in rungs].count(POST) == 12


def test_a_dst_change_between_rungs_does_not_shift_them():
    # Berlin leaves summer time at 03:00 on 2026-10-25: 01:00 local is 23:00 UTC the day before.
    berlin = ZoneInfo("Europe/Berlin")
    start = datetime(2026, 10, 25, 4, 0, tzinfo=berlin)  # 03:00 UTC, after the change
    end = datetime(2026, 10, 25, 5, 0, tzinfo=berlin)

    rungs = future_rungs(
        start_at=start, end_at=end, kinds=ALL_KINDS, now=CURRENT_TIME.replace(2026, 10, 1)
    )

    due = {(r.kind, r.offset): r.due_at for r in rungs}
    assert due[PRE, timedelta(minutes=-90)] == datetime(2026, 10, 25, 1, 30, tzinfo=UTC)
    assert due[INVITATION, timedelta(hours=-6)] == datetime(2026, 10, 24, 21, 0, tzinfo=UTC)
    assert due[INVITATION, timedelta(days=-1)] == datetime(2026, 10, 24, 3, 0, tzinfo=UTC)
    assert start - due[PRE, timedelta(minutes=-90)] == timedelta(minutes=90)


def test_questionnaire_and_invitation_switches_choose_the_kinds():
    assert enabled_kinds(questionnaires=True, invitations=False) == [PRE, POST]
    assert enabled_kinds(questionnaires=False, invitations=True) == [INVITATION]
    assert enabled_kinds(questionnaires=False, invitations=False) == []


def test_pre_and_invitation_reminders_expire_at_the_start_post_ones_four_hours_late():
    due = END + timedelta(minutes=15)

    assert expiry(PRE, start_at=START, due_at=START - timedelta(minutes=90)) == START
    assert expiry(INVITATION, start_at=START, due_at=START - timedelta(days=3)) == START
    assert expiry(POST, start_at=START, due_at=due) == due + timedelta(hours=4)


@pytest.mark.django_db
def test_creating_a_training_stores_its_ladder_exact_to_the_second(team, players, frozen):
    training = training_create(team=team, start_at=START, end_at=END, invitations_enabled=True)

    stored = ladder_of(training)
    expected = sorted(
        (r.kind, r.offset, r.due_at)
        for r in future_rungs(start_at=START, end_at=END, kinds=ALL_KINDS, now=CURRENT_TIME)
    )
    assert sorted(stored) == expected
    assert len(stored) == 22
    assert stored[0] == (INVITATION, timedelta(days=-3), datetime(2026, 11, 28, 18, 0, tzinfo=UTC))
    assert stored[-1] == (POST, timedelta(hours=3), datetime(2026, 12, 1, 22, 30, tzinfo=UTC))
    statuses = set(
        ScheduledTrainingNotification.objects.filter(training=training).values_list(
            "status", "version"
        )
    )
    assert statuses == {(Status.PENDING, 1)}


@pytest.mark.django_db
def test_a_training_created_in_a_local_time_zone_across_dst_keeps_exact_rungs(team, frozen):
    berlin = ZoneInfo("Europe/Berlin")
    start = datetime(2027, 3, 28, 3, 30, tzinfo=berlin)  # summer time began at 02:00 local
    training = training_create(team=team, start_at=start, end_at=start + timedelta(hours=1))

    pre = [due for kind, _, due in ladder_of(training) if kind == PRE]
    assert [start - due for due in pre] == minutes(90, 75, 60, 45, 30, 15)
    assert pre[0] == datetime(2027, 3, 28, 0, 0, tzinfo=UTC)


@pytest.mark.django_db
def test_a_training_created_late_skips_its_past_rungs(team, frozen):
    start = CURRENT_TIME + timedelta(minutes=50)

    training = training_create(team=team, start_at=start, end_at=start + timedelta(hours=1))

    pre = [offset for kind, offset, _ in ladder_of(training) if kind == PRE]
    assert pre == minutes(-45, -30, -15)
