from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from scheduling.rows.models import ScheduledEvent
from tests.trainings.factories import TeamFactory
from trainings.kinds import InvitationStatus, NotificationKind
from trainings.models import (
    Invitation,
    QuestionnaireAnswer,
    ScheduledTrainingNotification,
    Training,
)
from trainings.services import training_create

pytestmark = pytest.mark.django_db

Status = ScheduledEvent.Status
PRE, POST, INVITATION = NotificationKind
START = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
END = START + timedelta(hours=1)
ROWS = "/api/scheduled-training-notifications/"


def client_with(*codenames):
    user = User.objects.create_user(f"user-{'-'.join(codenames) or 'none'}", password="x")
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = APIClient()
    client.force_authenticate(User.objects.get(pk=user.pk))
    return client


@pytest.fixture
def training(team, players, frozen):
    return training_create(team=team, start_at=START, end_at=END, invitations_enabled=True)


def rows(training):
    return ScheduledTrainingNotification.objects.filter(training=training)


def test_creating_a_training_schedules_its_ladder(api, team, players, frozen):
    response = api.post(
        "/api/trainings/",
        {
            "team": team.pk,
            "start_at": "2026-12-01T19:00:00+01:00",
            "end_at": "2026-12-01T19:30:00Z",
            "invitations_enabled": True,
        },
        format="json",
    )

    assert response.status_code == 201, response.data
    training = Training.objects.get(pk=response.data["id"])
    assert training.start_at == START
    assert rows(training).count() == 22
    assert Invitation.objects.filter(training=training).count() == 3


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"start_at": "2026-12-01T18:00:00", "end_at": "2026-12-01T19:00:00Z"}, "start_at"),
        ({"start_at": "2026-12-01T18:00:00Z", "end_at": "tomorrow"}, "end_at"),
        ({"start_at": "2026-12-01T18:00:00Z", "end_at": "2026-12-01T17:00:00Z"}, "end_at"),
        ({"start_at": "2026-12-01T18:00:00Z"}, "end_at"),
        ({"start_at": "9999-12-31T20:00:00Z", "end_at": "9999-12-31T21:00:00Z"}, "start_at"),
        ({"start_at": "0001-01-01T00:30:00+01:00", "end_at": "2026-12-01T19:00:00Z"}, "start_at"),
        ({"start_at": "9000-12-31T20:00:00Z", "end_at": "9000-12-31T22:00:00Z"}, "end_at"),
        ({"start_at": "1970-01-02T18:00:00Z", "end_at": "1970-01-02T19:00:00Z"}, "start_at"),
    ],
)
def test_bad_training_times_are_a_400_naming_the_field(api, team, body, field):
    response = api.post("/api/trainings/", {"team": team.pk, **body}, format="json")

    assert response.status_code == 400
    assert field in response.data
    assert not Training.objects.exists()


def test_patching_the_times_moves_the_ladder(api, training):
    response = api.patch(
        f"/api/trainings/{training.pk}/", {"start_at": "2026-12-01T17:00:00Z"}, format="json"
    )

    assert response.status_code == 200, response.data
    assert response.data["start_at"] == "2026-12-01T17:00:00Z"
    training.refresh_from_db()
    assert training.start_at == START - timedelta(hours=1)
    assert training.end_at == END
    for row in rows(training).exclude(kind=POST):
        assert row.due_at == training.start_at + row.offset
        assert row.version == 2
    assert set(rows(training).filter(kind=POST).values_list("version", flat=True)) == {1}


def test_patching_a_time_before_the_start_is_refused(api, training):
    response = api.patch(
        f"/api/trainings/{training.pk}/", {"end_at": "2026-12-01T17:00:00Z"}, format="json"
    )

    assert response.status_code == 400
    assert "end_at" in response.data


def test_fields_other_than_the_times_cannot_be_patched(api, training):
    response = api.patch(
        f"/api/trainings/{training.pk}/",
        {"team": TeamFactory().pk, "invitations_enabled": False},
        format="json",
    )

    assert response.status_code == 400
    assert set(response.data) == {"team", "invitations_enabled"}


def test_deleting_a_training_removes_its_ladder(api, training):
    response = api.delete(f"/api/trainings/{training.pk}/")

    assert response.status_code == 204
    assert not ScheduledTrainingNotification.objects.exists()


def test_cancelling_a_training(api, training):
    response = api.post(f"/api/trainings/{training.pk}/cancel/")

    assert response.status_code == 200
    assert response.data["cancelled"] == 22
    assert response.data["training"]["cancelled_at"] is not None
    assert not rows(training).pending().exists()


def test_answering_the_questionnaire(api, training, players):
    url = f"/api/trainings/{training.pk}/answers/"

    response = api.post(url, {"player": players[0].pk, "phase": "pre"}, format="json")

    assert response.status_code == 201, response.data
    assert response.data["phase"] == "pre"
    assert QuestionnaireAnswer.objects.filter(training=training, player=players[0]).count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [({"player": "one", "phase": "pre"}, "player"), ({"phase": "during"}, "phase")],
)
def test_bad_answers_are_a_400_naming_the_field(api, training, players, body, field):
    body = {"player": players[0].pk, **body}

    response = api.post(f"/api/trainings/{training.pk}/answers/", body, format="json")

    assert response.status_code == 400
    assert field in response.data


def test_replying_to_an_invitation(api, training, players):
    invitation = Invitation.objects.get(training=training, player=players[0])

    response = api.patch(
        f"/api/invitations/{invitation.pk}/", {"status": "accepted"}, format="json"
    )

    assert response.status_code == 200, response.data
    invitation.refresh_from_db()
    assert invitation.status == InvitationStatus.ACCEPTED
    assert invitation.replied_at is not None
    bad = api.patch(f"/api/invitations/{invitation.pk}/", {"status": "maybe"}, format="json")
    assert bad.status_code == 400
    assert "status" in bad.data
    # "pending" reads back on a new invitation, but is no reply.
    unsaid = api.patch(f"/api/invitations/{invitation.pk}/", {"status": "pending"}, format="json")
    assert unsaid.status_code == 400
    assert unsaid.data["status"] == ["A reply is accepted or denied."]


def test_teams_and_players(api, team, players):
    assert api.get("/api/teams/").data["results"][0]["name"] == "Falcons"
    response = api.post("/api/players/", {"team": team.pk, "name": "Ana"}, format="json")
    assert response.status_code == 201
    assert api.get(f"/api/players/?team={team.pk}").data["count"] == 4


def test_the_list_filters_by_kind_status_team_training_and_due_time(api, training, frozen):
    other = training_create(team=TeamFactory(), start_at=START, end_at=END)
    rows(training).filter(kind=PRE, offset=timedelta(minutes=-90)).cancel()

    def count(query):
        response = api.get(f"{ROWS}?{query}")
        assert response.status_code == 200, response.data
        return response.data["count"]

    assert count("") == 22 + 18
    assert count("kind=invitation") == 4
    assert count("kind=pre_questionnaire&kind=post_questionnaire") == 36
    assert count(f"team={training.team_id}") == 22
    assert count(f"training={other.pk}") == 18
    assert count("status=cancelled") == 1
    assert count("due_after=2026-12-01T19:00:00Z&due_before=2026-12-01T20:00:00Z") == 6
    row = api.get(f"{ROWS}?kind=post_questionnaire&training={other.pk}").data["results"][0]
    assert (row["team"], row["kind"], row["offset"]) == (other.team_id, POST, "PT15M")
    pre = api.get(f"{ROWS}?kind=pre_questionnaire&training={other.pk}").data["results"][0]
    assert pre["offset"].startswith("-PT")  # ISO 8601, not a timedelta's "-1 22:30:00"


def test_a_naive_due_filter_is_a_400_naming_it(api, training):
    response = api.get(f"{ROWS}?due_after=2026-12-01T19:00:00")

    assert response.status_code == 400
    assert "due_after" in response.data


def test_bulk_reschedule_and_cancel_over_a_filter(api, training, frozen):
    shift = api.post(
        f"{ROWS}reschedule/",
        {"filter": {"training": training.pk, "kind": "invitation"}, "shift": "-PT1H"},
        format="json",
    )
    cancel = api.post(
        f"{ROWS}cancel/",
        {"filter": {"kind": "post_questionnaire"}, "reason": "rain"},
        format="json",
    )

    assert (shift.status_code, shift.data) == (200, {"count": 4})
    assert (cancel.status_code, cancel.data) == (200, {"count": 12})
    invitation = rows(training).get(kind=INVITATION, offset=timedelta(hours=-6))
    assert invitation.due_at == START - timedelta(hours=7)
    assert set(rows(training).filter(kind=POST).values_list("status", "cancel_reason")) == {
        (Status.CANCELLED, "rain")
    }


def test_bulk_actions_refuse_bad_input_naming_the_field(api, training):
    naive = api.post(
        f"{ROWS}reschedule/",
        {"filter": {"kind": "invitation"}, "due_at": "2026-12-01T10:00"},
        format="json",
    )
    unknown = api.post(f"{ROWS}cancel/", {"filter": {"colour": "red"}}, format="json")

    assert naive.status_code == 400
    assert "due_at" in naive.data
    assert unknown.status_code == 400
    assert "filter" in unknown.data
    assert rows(training).pending().count() == 22


def test_moving_a_training_out_of_the_storable_range_is_a_400(api, training):
    response = api.patch(
        f"/api/trainings/{training.pk}/",
        {"start_at": "9000-12-31T20:00:00Z", "end_at": "9000-12-31T22:00:00Z"},
        format="json",
    )

    assert response.status_code == 400
    assert "1970 to 9000" in str(response.data["end_at"])
    training.refresh_from_db()
    assert training.start_at == START
    assert set(rows(training).values_list("version", flat=True)) == {1}


@pytest.mark.parametrize("shift", ["P9999999999D", "P36526D", "-PT999999999H"])
def test_a_bulk_shift_beyond_100_years_is_a_400_naming_it(api, training, shift):
    response = api.post(
        f"{ROWS}reschedule/", {"filter": {"training": training.pk}, "shift": shift}, format="json"
    )

    assert response.status_code == 400
    assert "100 years" in str(response.data["shift"])
    assert set(rows(training).values_list("version", flat=True)) == {1}


def test_anonymous_users_are_refused(training):
    assert APIClient().get("/api/trainings/").status_code in (401, 403)
    assert APIClient().get(ROWS).status_code in (401, 403)


def test_reading_needs_the_view_permission(training):
    assert client_with().get(ROWS).status_code == 403
    assert client_with("view_scheduledtrainingnotification").get(ROWS).status_code == 200


def test_bulk_actions_and_cancel_need_the_change_permission(training):
    viewer = client_with("view_scheduledtrainingnotification", "view_training")
    body = {"filter": {"kind": "invitation"}}

    assert viewer.post(f"{ROWS}cancel/", body, format="json").status_code == 403
    assert viewer.post(f"/api/trainings/{training.pk}/cancel/").status_code == 403
    assert rows(training).pending().count() == 22
    changer = client_with("change_scheduledtrainingnotification")
    assert changer.post(f"{ROWS}cancel/", body, format="json").data == {"count": 4}


def test_moving_and_answering_need_their_permissions(training, players):
    viewer = client_with("view_training")
    url = f"/api/trainings/{training.pk}/"

    assert viewer.patch(url, {"start_at": "2026-12-02T18:00:00Z"}, format="json").status_code == 403
    answer = {"player": players[0].pk, "phase": "pre"}
    assert viewer.post(f"{url}answers/", answer, format="json").status_code == 403
    answerer = client_with("view_training", "add_questionnaireanswer")
    players[0].user = User.objects.get(username="user-view_training-add_questionnaireanswer")
    players[0].save(update_fields=["user"])  # the player themself
    assert answerer.post(f"{url}answers/", answer, format="json").status_code == 201


def test_the_openapi_schema_lists_the_training_endpoints(api):
    response = api.get("/api/schema/", HTTP_ACCEPT="application/json")

    assert response.status_code == 200
    paths = response.json()["paths"]
    for path in (
        "/api/trainings/{id}/cancel/",
        "/api/trainings/{id}/answers/",
        "/api/scheduled-training-notifications/reschedule/",
        "/api/invitations/{id}/",
    ):
        assert path in paths
