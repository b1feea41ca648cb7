"""Pausing from the admin: the dashboard and each scheduled model's list show the pause and
post to one view, for staff with scheduling.pause_delivery; the signed-in user is recorded."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from scheduling.delivery.pauses.models import DeliveryPause
from scheduling.delivery.pauses.services import delivery_pause, is_paused
from scheduling.rows.actors import actor
from tests.factories import make_due_pings
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db

PAUSE = "/admin/scheduling/pause/"
DASHBOARD = "/admin/scheduling/dashboard/"
PINGS = "/admin/testapp/scheduledping/"
PING = "testapp.scheduledping"


def staff(*codenames: str) -> Client:
    user = User.objects.create_user(f"staff-{User.objects.count()}", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def operator() -> Client:
    return staff("pause_delivery", "view_scheduledping")


def test_an_operator_pauses_from_the_changelist_and_comes_back_to_it():
    client = operator()
    page = client.get(PINGS).content.decode()
    assert "Pause delivery" in page

    answer = client.post(
        PAUSE,
        {"model": "testapp.scheduledping", "action": "pause", "reason": "dispute", "next": PINGS},
    )

    assert answer.status_code == 302
    assert answer["Location"] == PINGS
    pause = DeliveryPause.objects.get()
    assert (pause.model, pause.paused_by, pause.reason) == (
        "testapp.scheduledping",
        f"admin:{User.objects.get().username}",
        "dispute",
    )
    page = client.get(PINGS).content.decode()
    assert "Delivery paused" in page
    assert "Resume delivery" in page


def test_an_operator_resumes_from_the_dashboard():
    with actor("ops:alice"):
        delivery_pause(model=ScheduledPing, reason="provider down")
    client = operator()

    page = client.get(DASHBOARD).content.decode()
    payload = client.get(f"{DASHBOARD}data/").json()
    answer = client.post(PAUSE, {"model": "testapp.scheduledping", "action": "resume"})

    assert "Delivery paused</strong> paused by ops:alice since" in page
    assert "provider down" in page
    ping = next(m for m in payload["models"] if m["model"] == "testapp.scheduledping")
    assert ping["pause"]["paused"].startswith("paused by ops:alice since ")
    assert answer.status_code == 302
    assert not is_paused(ScheduledPing)


def test_staff_without_the_permission_see_the_pause_but_no_form_and_are_refused():
    delivery_pause(model=ScheduledPing)
    client = staff("view_scheduledping")

    page = client.get(PINGS).content.decode()
    answer = client.post(PAUSE, {"model": "testapp.scheduledping", "action": "resume"})

    assert "Delivery paused" in page
    assert "Resume delivery" not in page
    assert answer.status_code == 403
    assert is_paused(ScheduledPing)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"model": "testapp.Nothing", "action": "pause"}, "app_label.ModelName"),
        ({"model": "testapp.scheduledping", "action": "stop"}, "action:"),
        ({"model": "testapp.scheduledping", "action": "pause", "reason": "x" * 501}, "reason:"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(body, field):
    answer = operator().post(PAUSE, body)

    assert answer.status_code == 400
    assert field in answer.content.decode()
    assert not DeliveryPause.objects.exists()


def test_an_outside_next_is_not_followed():
    answer = operator().post(
        PAUSE, {"model": "testapp.scheduledping", "action": "pause", "next": "https://evil.test/"}
    )

    assert answer["Location"] == "/admin/"


def test_a_paused_late_model_is_in_no_alarm_on_the_dashboard(settings):
    settings.SCHEDULING_HEALTH_MAX_LATENESS = 20
    make_due_pings(2, ago=timedelta(minutes=5))
    client = operator()
    late = next(m for m in client.get(f"{DASHBOARD}data/").json()["models"] if m["model"] == PING)
    delivery_pause(model=ScheduledPing)

    payload = client.get(f"{DASHBOARD}data/").json()

    ping = next(m for m in payload["models"] if m["model"] == PING)
    assert late["late"]
    assert (ping["late"], ping["alarms"], ping["due_now"]) == (False, [], 2)
    assert ping["pause"]["paused"].startswith("paused by ")


def test_a_paused_late_model_is_not_late_on_the_needs_attention_page(settings):
    settings.SCHEDULING_HEALTH_MAX_LATENESS = 20
    make_due_pings(2, ago=timedelta(minutes=5))
    client = staff("view_scheduledping")
    before = client.get("/admin/scheduling/attention/").context["late"]
    delivery_pause(model=ScheduledPing)

    after = client.get("/admin/scheduling/attention/").context["late"]

    assert [group.model for group in before] == [PING]
    assert after == []
