"""No push between 22:00 and 07:00 in the team's time zone: reminders due in the night go at
07:00, one per training and kind (post-training ones fold into one), and one that would be
late by then is cancelled. A moved training decides again."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User

from scheduling.delivery.sweep.run import sweep
from scheduling.rows.models import ScheduledEvent
from tests.conftest import wait_for
from tests.trainings.factories import PlayerFactory, TeamFactory
from trainings.kinds import NotificationKind
from trainings.models import PushNotification, ScheduledTrainingNotification, Team
from trainings.services import training_create, training_move

Status = ScheduledEvent.Status
PRE, POST, INVITATION = NotificationKind
PARIS = ZoneInfo("Europe/Paris")


def paris(*args):
    return datetime(*args, tzinfo=PARIS)


EVENING = {"start_at": paris(2026, 12, 3, 20, 30), "end_at": paris(2026, 12, 3, 22, 0)}
AFTERNOON = {"start_at": paris(2026, 12, 3, 14, 0), "end_at": paris(2026, 12, 3, 15, 30)}


@pytest.fixture
def paris_team(db):
    team: Team = TeamFactory(name="Lutins", timezone="Europe/Paris", quiet_hours=True)
    PlayerFactory(team=team)
    return team


def rows(training, kind, **filters):
    return ScheduledTrainingNotification.objects.filter(training=training, kind=kind, **filters)


@pytest.mark.django_db
def test_post_training_reminders_of_an_evening_training_fold_into_one_at_seven(paris_team, frozen):
    training = training_create(team=paris_team, **EVENING)

    (kept,) = rows(training, POST, status=Status.PENDING)
    assert kept.due_at == paris(2026, 12, 4, 7, 0)
    assert (kept.offset, kept.business_due_at) == (timedelta(hours=3), paris(2026, 12, 4, 1, 0))
    folded = rows(training, POST, status=Status.CANCELLED)
    assert folded.count() == 11
    assert set(folded.values_list("cancel_reason", flat=True)) == {
        f"folded into #{kept.pk} (quiet hours)"
    }
    # The pre-training ones, 19:00 to 20:15, are left as they were.
    pre = rows(training, PRE, status=Status.PENDING)
    assert [row.due_at for row in pre] == [
        paris(2026, 12, 3, 19, 0) + timedelta(minutes=15 * i) for i in range(6)
    ]
    assert not pre.filter(business_due_at__isnull=False).exists()


@pytest.mark.django_db
def test_an_early_training_folds_its_night_reminders_into_the_one_due_at_seven(paris_team, frozen):
    training = training_create(
        team=paris_team, start_at=paris(2026, 12, 3, 7, 30), end_at=paris(2026, 12, 3, 9, 0)
    )

    pending = rows(training, PRE, status=Status.PENDING)
    assert [(row.offset, row.due_at) for row in pending] == [
        (timedelta(minutes=-30), paris(2026, 12, 3, 7, 0)),
        (timedelta(minutes=-15), paris(2026, 12, 3, 7, 15)),
    ]
    assert rows(training, PRE, status=Status.CANCELLED).count() == 4


@pytest.mark.django_db
def test_a_reminder_held_past_the_start_is_cancelled_instead(paris_team, frozen):
    training = training_create(
        team=paris_team, start_at=paris(2026, 12, 3, 6, 30), end_at=paris(2026, 12, 3, 8, 0)
    )

    pre = rows(training, PRE)
    assert set(pre.values_list("status", flat=True)) == {Status.CANCELLED}
    assert set(pre.values_list("cancel_reason", flat=True)) == {
        "skipped for quiet hours until 07:00 (Europe/Paris): it would have expired by then"
    }


@pytest.mark.django_db
def test_a_team_without_quiet_hours_gets_its_reminders_in_the_night(frozen):
    team = TeamFactory(timezone="Europe/Paris", quiet_hours=False)
    training = training_create(team=team, **EVENING)

    assert rows(training, POST, status=Status.PENDING).count() == 12


@pytest.mark.django_db
def test_moving_a_training_out_of_the_evening_brings_the_folded_reminders_back(paris_team, frozen):
    training = training_create(team=paris_team, **EVENING)

    training_move(training=training, **AFTERNOON)

    post = rows(training, POST)
    assert set(post.values_list("status", flat=True)) == {Status.PENDING}
    assert [row.due_at for row in post] == [
        paris(2026, 12, 3, 15, 30) + timedelta(minutes=15 * i) for i in range(1, 13)
    ]
    assert not post.filter(business_due_at__isnull=False).exists()


@pytest.mark.django_db
def test_moving_a_training_into_the_evening_folds_its_reminders(paris_team, frozen):
    training = training_create(team=paris_team, **AFTERNOON)

    training_move(training=training, **EVENING)

    (kept,) = rows(training, POST, status=Status.PENDING)
    assert (kept.due_at, kept.business_due_at) == (
        paris(2026, 12, 4, 7, 0),
        paris(2026, 12, 4, 1, 0),
    )
    assert rows(training, POST, status=Status.CANCELLED).count() == 11


@pytest.mark.django_db
def test_the_team_time_zone_round_trips_over_rest_and_a_bad_one_is_a_400(api):
    created = api.post("/api/teams/", {"name": "Lutins", "timezone": "Europe/Paris"}, format="json")
    assert created.status_code == 201, created.data
    assert (created.data["timezone"], created.data["quiet_hours"]) == ("Europe/Paris", True)
    changed = api.patch(
        f"/api/teams/{created.data['id']}/",
        {"timezone": "America/New_York", "quiet_hours": False},
        format="json",
    )
    assert (changed.data["timezone"], changed.data["quiet_hours"]) == ("America/New_York", False)

    refused = api.post("/api/teams/", {"name": "X", "timezone": "Paris"}, format="json")
    assert refused.status_code == 400
    assert "Europe/Paris" in str(refused.data["timezone"])


@pytest.mark.django_db
def test_the_team_time_zone_round_trips_in_the_admin(client):
    client.force_login(User.objects.create_superuser("admin", password="x"))
    team = TeamFactory()
    url = f"/admin/trainings/team/{team.pk}/change/"
    form = {"name": team.name, "timezone": "Europe/Paris", "quiet_hours": "on"}
    inline = {"players-TOTAL_FORMS": 0, "players-INITIAL_FORMS": 0}

    assert client.post(url, {**form, **inline}).status_code == 302
    team.refresh_from_db()
    assert (team.timezone, team.quiet_hours) == ("Europe/Paris", True)
    page = client.post(url, {**form, **inline, "timezone": "Mars/Olympus"})
    assert page.status_code == 200
    assert "timezone" in page.context["adminform"].form.errors


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_post_training_reminders_of_an_evening_training_in_paris_are_one_push_at_seven(
    paris_team, trainings_worker
):
    # The sweep's `now` stands in for the night passing; the worker runs on the real clock,
    # years before the training, so nothing it handles has expired.
    training = training_create(
        team=paris_team, start_at=paris(2030, 6, 12, 20, 30), end_at=paris(2030, 6, 12, 22, 0)
    )
    (kept,) = rows(training, POST, status=Status.PENDING)
    assert kept.due_at == paris(2030, 6, 13, 7, 0)

    before_seven = sweep(ScheduledTrainingNotification, now=paris(2030, 6, 13, 6, 59, 59))
    assert before_seven.delivered == 0  # the pre-training reminders expired at the start
    at_seven = sweep(ScheduledTrainingNotification, now=paris(2030, 6, 13, 7, 0).astimezone(UTC))
    assert at_seven.delivered == 1

    kept.refresh_from_db()
    wait_for(lambda: rows(training, POST, handled_at__isnull=False).exists())
    (push,) = PushNotification.objects.filter(training=training)
    assert (push.kind, push.event_id) == (POST, kept.event_id)
    assert rows(training, POST, status=Status.DELIVERED).count() == 1
