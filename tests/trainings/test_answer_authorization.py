"""Answering a questionnaire needs only `add_questionnaireanswer`, not `view_training` (issue
#26, finding 6): such a user answers only for a player of the training's team, and "no such
training" and "not that team's player" are one answer, so the endpoint tells nobody which
trainings or players exist. Who may answer for which player (the player's own user, or staff):
tests/security/test_answers_by_the_player.py."""

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from tests.trainings.factories import PlayerFactory, TeamFactory
from tests.trainings.test_training_api import END, START
from trainings.models import QuestionnaireAnswer, Training
from trainings.services import training_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def answerer() -> APIClient:
    # Staff: answers for any player (a player's own user answers for that player alone).
    user = User.objects.create_user("answerer", password="x", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename="add_questionnaireanswer"))
    client = APIClient()
    client.force_authenticate(User.objects.get(pk=user.pk))
    return client


@pytest.fixture
def training(team, players, frozen) -> Training:
    return training_create(team=team, start_at=START, end_at=END)


def answer(client: APIClient, training_id: object, player_id: int):
    body = {"player": player_id, "phase": "pre"}
    return client.post(f"/api/trainings/{training_id}/answers/", body, format="json")


def test_a_player_of_the_team_is_answered_for(answerer, training, players):
    response = answer(answerer, training.pk, players[0].pk)

    assert response.status_code == 201, response.content
    assert QuestionnaireAnswer.objects.get().player == players[0]


def test_another_teams_player_gets_the_answer_a_missing_training_gets(answerer, training, players):
    stranger = PlayerFactory(team=TeamFactory(name="Owls"))
    missing = Training.objects.order_by("-pk").values_list("pk", flat=True)[0] + 1000

    refusals = [
        answer(answerer, training.pk, stranger.pk),  # not this team's
        answer(answerer, missing, players[0].pk),  # no such training
        answer(answerer, training.pk, stranger.pk + 1000),  # no such player
        answer(answerer, "not-a-number", players[0].pk),
        answer(answerer, 10**30, players[0].pk),
    ]

    assert {(r.status_code, r.content) for r in refusals} == {
        (404, b'{"detail":"No such training with this player in its team."}')
    }
    assert not QuestionnaireAnswer.objects.exists()


def test_a_viewer_of_trainings_gets_the_same_answers(training, players):
    user = User.objects.create_user("coach", password="x", is_staff=True)
    codenames = ("add_questionnaireanswer", "view_training")
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = APIClient()
    client.force_authenticate(User.objects.get(pk=user.pk))
    stranger = PlayerFactory(team=TeamFactory(name="Owls"))

    assert answer(client, training.pk, stranger.pk).status_code == 404
    assert answer(client, training.pk, players[1].pk).status_code == 201
