"""A newcomer creating a training at night is told, on the creation page and after saving,
that the team's quiet hours hold its reminders."""

import pytest
from django.contrib.auth.models import User
from django.contrib.messages import get_messages

from tests.trainings.test_training_admin import END, START, TRAININGS, inline_management, times
from trainings.admin import QUIET_HOURS_NOTE

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("admin", password="x"))
    return client


def test_the_creation_page_explains_quiet_hours(admin_client):
    page = admin_client.get(f"{TRAININGS}add/").content.decode()

    assert "22:00 and 07:00" in page
    assert QUIET_HOURS_NOTE.split(":")[0] in page


def test_saving_a_training_of_a_quiet_team_says_so(admin_client, team, players, frozen):
    team.quiet_hours = True
    team.save()
    add = admin_client.get(f"{TRAININGS}add/")
    data = {"team": team.pk, **times(START, END), **inline_management(add)}

    response = admin_client.post(f"{TRAININGS}add/", data, follow=True)

    said = " ".join(str(message) for message in get_messages(response.wsgi_request))
    assert f"{team} has quiet hours on (22:00 to 07:00, {team.timezone})" in said
