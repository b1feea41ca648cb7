"""A questionnaire answer stops that player's reminders, so over REST only the player themself
(the user linked to the player) or staff gives it, even with `add_questionnaireanswer`: anyone
else gets a 403 saying why, decided before the body's player is looked up."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.utils import timezone

from tests.conftest import client_for
from tests.trainings.factories import PlayerFactory, TeamFactory
from trainings.models import QuestionnaireAnswer
from trainings.services import training_create

pytestmark = pytest.mark.django_db

WHO = "Only the player themself (the user linked to the player) or staff may answer for a player"


def answerer(name, *, staff=False):
    user = User.objects.create_user(name, password="x", is_staff=staff)
    user.user_permissions.set(Permission.objects.filter(codename="add_questionnaireanswer"))
    return User.objects.get(pk=user.pk)


@pytest.fixture
def training():
    team = TeamFactory(name="Falcons")
    PlayerFactory.create_batch(2, team=team)
    start = timezone.now() + timedelta(days=2)
    return training_create(team=team, start_at=start, end_at=start + timedelta(hours=1))


def answer(user, training, player):
    body = {"player": player.pk, "phase": "pre"}
    return client_for(user).post(f"/api/trainings/{training.pk}/answers/", body, format="json")


def test_a_player_answers_for_themself(training):
    ann, _ = training.team.players.order_by("pk")
    ann.user = answerer("ann")
    ann.save(update_fields=["user"])

    response = answer(ann.user, training, ann)

    assert response.status_code == 201, response.content
    assert QuestionnaireAnswer.objects.get().player == ann


def test_a_player_cannot_answer_for_a_teammate_and_is_told_why(training):
    ann, bob = training.team.players.order_by("pk")
    ann.user = answerer("ann")
    ann.save(update_fields=["user"])

    response = answer(ann.user, training, bob)

    assert response.status_code == 403
    assert response.json() == {"detail": f"{WHO}: this user is player {ann.pk}."}
    assert not QuestionnaireAnswer.objects.exists()


def test_a_user_who_is_no_player_cannot_answer_whatever_the_permission(training):
    ann, _ = training.team.players.order_by("pk")

    response = answer(answerer("holder"), training, ann)

    assert response.status_code == 403
    assert response.json() == {"detail": f"{WHO}: this user is no player."}
    assert not QuestionnaireAnswer.objects.exists()  # so ann's reminders go on


def test_the_refusal_is_the_same_for_a_player_that_does_not_exist(training):
    ghost = PlayerFactory.build(pk=10**9)

    response = answer(answerer("holder"), training, ghost)

    assert response.status_code == 403
    assert response.json() == {"detail": f"{WHO}: this user is no player."}


def test_staff_answer_for_any_player_of_the_team(training):
    _, bob = training.team.players.order_by("pk")

    response = answer(answerer("coach", staff=True), training, bob)

    assert response.status_code == 201, response.content
    assert QuestionnaireAnswer.objects.get().player == bob


def test_staff_without_the_permission_are_still_refused(training):
    ann, _ = training.team.players.order_by("pk")
    staff = User.objects.create_user("staff", password="x", is_staff=True)

    assert answer(staff, training, ann).status_code == 403
