"""A paused model as operators see it: /healthz says paused (not failing), /metrics has a
gauge per model, and the REST API pauses and resumes for staff with scheduling.pause_delivery."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.utils import timezone
from rest_framework.test import APIClient

from scheduling.delivery.pauses.models import DeliveryPause, DeliveryPauseEntry
from scheduling.delivery.pauses.services import delivery_pause, is_paused
from scheduling.rows.actors import actor
from tests.conftest import client_for
from tests.factories import ScheduledPingFactory
from tests.ops.helpers import PING, TOKEN, scrape, value
from tests.testapp.models import ScheduledNotice, ScheduledPing

pytestmark = pytest.mark.django_db

PAUSES = "/api/pauses/"


def staff(*, may_pause: bool = True, is_staff: bool = True) -> APIClient:
    user = User.objects.create_user(f"ops-{User.objects.count()}", password="pw", is_staff=is_staff)
    if may_pause:
        user.user_permissions.add(Permission.objects.get(codename="pause_delivery"))
    return client_for(user)


def test_healthz_reports_a_paused_late_model_as_paused_not_failing(client, settings):
    settings.SCHEDULING_HEALTH_MAX_LATENESS = 20
    ScheduledPingFactory(due_at=timezone.now() - timedelta(minutes=5))
    assert client.get("/healthz").status_code == 503  # late while it delivers

    with actor("ops:alice"):
        delivery_pause(model=ScheduledPing, reason="provider down")
    answer = client.get("/healthz")

    assert answer.status_code == 200
    body = answer.json()
    assert "delivery" not in body
    assert body["paused"].startswith(f"{PING}: paused by ops:alice since ")
    assert body["paused"].endswith(": provider down")


def test_healthz_keeps_its_shape_when_nothing_is_paused(client):
    assert "paused" not in client.get("/healthz").json()


def test_metrics_has_a_paused_gauge_per_model(client, settings):
    settings.SCHEDULING_METRICS_TOKEN = TOKEN
    delivery_pause(model=ScheduledPing)

    samples = scrape(client)

    assert value(samples, "scheduling_paused") == 1
    assert value(samples, "scheduling_paused", "testapp.schedulednotice") == 0


def test_rest_pauses_lists_and_resumes_as_the_signed_in_user():
    api = staff()

    created = api.post(PAUSES, {"model": "testapp.ScheduledPing", "reason": "label dispute"})
    listed = api.get(PAUSES)
    one = api.get(f"{PAUSES}testapp.ScheduledPing/")
    resumed = api.delete(f"{PAUSES}testapp.ScheduledPing/")

    assert created.status_code == 201, created.content
    assert created.json()["model"] == PING
    assert created.json()["paused_by"].startswith("api:ops-")
    assert [p["model"] for p in listed.json()["results"]] == [PING]
    assert one.json()["reason"] == "label dispute"
    assert resumed.status_code == 204
    assert not is_paused(ScheduledPing)
    assert list(DeliveryPauseEntry.objects.values_list("action", flat=True).order_by("pk")) == [
        "paused",
        "resumed",
    ]


def test_rest_resuming_a_model_not_paused_is_a_404():
    assert staff().delete(f"{PAUSES}testapp.ScheduledNotice/").status_code == 404
    assert not is_paused(ScheduledNotice)


@pytest.mark.parametrize(
    "who",
    [
        {"may_pause": False},  # staff without the permission
        {"is_staff": False},  # the permission, not staff
    ],
)
def test_rest_refuses_without_staff_and_the_permission(who):
    api = staff(**who)

    assert api.post(PAUSES, {"model": "testapp.ScheduledPing"}).status_code == 403
    assert api.get(PAUSES).status_code == 403
    assert api.delete(f"{PAUSES}testapp.ScheduledPing/").status_code == 403
    assert not DeliveryPause.objects.exists()


@pytest.mark.parametrize("body", [{"model": "testapp.Nothing"}, {"model": ""}, {}])
def test_rest_refuses_an_unknown_model_with_a_400_naming_the_field(body):
    answer = staff().post(PAUSES, body, format="json")

    assert answer.status_code == 400, answer.content
    assert "model" in answer.json()
    assert not DeliveryPause.objects.exists()


def test_rest_refuses_an_unknown_model_to_resume_naming_the_form():
    answer = staff().delete(f"{PAUSES}testapp.Nothing/")

    assert answer.status_code == 400
    assert "app_label.ModelName" in answer.json()["model"][0]
