"""The statements one `POST /api/schedules/` costs: counted, so a read of the new schedule's
occurrences or of the schedule itself shows as a failing test (the speed under load is the
bench's `cron_scale` scenario)."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from scheduling.recurring.api import ScheduleSerializer
from scheduling.recurring.models import RecurringSchedule
from tests.conftest import CURRENT_TIME
from tests.scheduling.recurring.conftest import pending

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("frozen_clock")]

URL = "/api/schedules/"
# The token with its user (1), the user's and their groups' permissions (2), the name's
# uniqueness check (1), the schedule's INSERT (1), one INSERT of its first occurrences (1), and
# the savepoint pair the test's own transaction turns the atomic block into (2; in production
# a BEGIN and a COMMIT). Nothing is read back: a new schedule has no occurrence to look for.
QUERIES_PER_CREATION = 8


@pytest.fixture
def token_client() -> APIClient:
    """Authenticated as a real API client is: by its token header, looked up per request."""
    user = User.objects.create_user("operator")
    codenames = [f"{action}_recurringschedule" for action in ("view", "add")]
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.mark.parametrize(
    "fields",
    [
        {"cron": "0 3 * * *"},
        # A past starts_at: its missed fire times go in the same INSERT as the head.
        {
            "cron": "0 * * * *",
            "misfire_policy": "fire_all",
            "starts_at": (CURRENT_TIME - timedelta(hours=3)).isoformat(),
        },
    ],
)
def test_a_creation_costs_the_same_statements_whatever_it_materialises(
    token_client, django_assert_num_queries, fields
):
    with django_assert_num_queries(QUERIES_PER_CREATION):
        response = token_client.post(
            URL, {"name": "nightly", "queue": "reports", **fields}, format="json"
        )

    assert response.status_code == 201, response.content
    schedule = RecurringSchedule.objects.get(name="nightly")
    head = pending(schedule)[-1]
    assert response.json()["next_fire_at"] == head.due_at.isoformat().replace("+00:00", "Z")


def test_the_creation_answers_what_a_read_of_the_schedule_then_shows(token_client):
    created = token_client.post(
        URL,
        {"name": "nightly", "cron": "0 3 * * *", "timezone": "Europe/Paris", "queue": "reports"},
        format="json",
    )

    assert created.status_code == 201, created.content
    assert created.json() == token_client.get(f"{URL}nightly/").json()


def test_a_disabled_schedule_is_created_with_no_next_fire(token_client):
    response = token_client.post(
        URL,
        {"name": "off", "cron": "0 3 * * *", "queue": "reports", "enabled": False},
        format="json",
    )

    assert response.status_code == 201, response.content
    assert response.json()["next_fire_at"] is None
    assert not pending(RecurringSchedule.objects.get(name="off"))


def test_each_serializer_has_fields_of_its_own_though_they_are_worked_out_once():
    """The fields come from the class's one build, copied: none shared between two requests'
    serializers, each bound to its own (a list's child to its own list)."""
    first, second = ScheduleSerializer(), ScheduleSerializer(data={})

    assert list(first.fields) == list(second.fields)
    assert all(first.fields[name] is not second.fields[name] for name in first.fields)
    assert first.fields["name"].parent is first
    assert second.fields["name"].parent is second
    assert first.fields["cron"].validators is not second.fields["cron"].validators
    calendars = second.fields["calendars"]
    assert calendars.child is not first.fields["calendars"].child
    assert calendars.child.parent is calendars
    assert not second.is_valid()
    assert set(second.errors) == {"name", "cron"}
