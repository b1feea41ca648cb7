"""Bulk endpoints are throttled per user; session-authenticated writes need a CSRF token."""

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient


def bulk_paths() -> list[str]:
    """Every bulk action in the schema: POST .../cancel/, .../reschedule/ or .../retry/."""
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    actions = ("/cancel/", "/reschedule/", "/retry/")
    return sorted(path for path in paths if "{" not in path and path.endswith(actions))


BULK_PATHS = bulk_paths()


def bulk_body(path: str) -> dict[str, Any]:
    selection = (
        {"key": "nightly-report"} if path.startswith("/api/jobs/") else {"status": "pending"}
    )
    if path.endswith("/retry/"):
        return {"filter": selection}
    change = {"shift": "PT1H"} if path.endswith("/reschedule/") else {"reason": "test"}
    return {"filter": selection, **change}


def test_every_bulk_action_is_found():
    from scheduling.rows.registry import scheduled_models

    domains = [
        f"/api/{resource}/{action}/"
        for resource in ("scheduled-purchases", "scheduled-training-notifications")
        for action in ("cancel", "reschedule", "retry")
    ]
    generic = [
        f"/api/events/{model._meta.app_label}/{model._meta.model_name}/{action}/"
        for model in scheduled_models()
        for action in ("cancel", "reschedule", "retry")
    ]
    jobs = ["/api/jobs/cancel/", "/api/jobs/reschedule/"]
    assert sorted([*domains, *generic, *jobs]) == BULK_PATHS


@pytest.mark.parametrize("path", BULK_PATHS)
def test_a_bulk_action_answers_429_past_the_rate(world, superuser, settings, path):
    settings.SCHEDULING_BULK_THROTTLE_RATE = "2/min"
    api = APIClient()
    api.force_authenticate(superuser)

    answers = [api.post(path, bulk_body(path), format="json").status_code for _ in range(3)]

    assert answers == [200, 200, 429]


def test_the_budget_is_shared_by_every_bulk_action_and_kept_per_user(
    world, superuser, settings, django_user_model
):
    settings.SCHEDULING_BULK_THROTTLE_RATE = "2/min"
    api = APIClient()
    api.force_authenticate(superuser)
    other = APIClient()
    other.force_authenticate(django_user_model.objects.create_superuser("other", "", "pw"))

    for path in BULK_PATHS[:2]:
        assert api.post(path, bulk_body(path), format="json").status_code == 200
    assert api.post(BULK_PATHS[2], bulk_body(BULK_PATHS[2]), format="json").status_code == 429
    assert other.post(BULK_PATHS[2], bulk_body(BULK_PATHS[2]), format="json").status_code == 200


def test_reads_are_not_throttled_by_the_bulk_rate(world, superuser, settings):
    settings.SCHEDULING_BULK_THROTTLE_RATE = "1/min"
    api = APIClient()
    api.force_authenticate(superuser)
    assert {api.get("/api/scheduled-purchases/").status_code for _ in range(3)} == {200}


# --- CSRF on session authentication ----------------------------------------------------------


@pytest.fixture
def session_client(superuser: User) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(superuser)
    return client


def csrf_token(client: Client) -> str:
    client.get("/admin/")  # a page with a form sets the cookie
    return client.cookies["csrftoken"].value


@pytest.mark.parametrize("path", BULK_PATHS)
def test_a_session_write_without_a_csrf_token_is_refused(world, session_client, path):
    response = session_client.post(path, bulk_body(path), content_type="application/json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]


@pytest.mark.parametrize("path", BULK_PATHS)
def test_a_session_write_with_the_csrf_token_passes(world, session_client, path):
    token = csrf_token(session_client)
    response = session_client.post(
        path, bulk_body(path), content_type="application/json", headers={"X-CSRFToken": token}
    )
    assert response.status_code == 200


def test_other_session_writes_need_the_token_too(world, session_client):
    body = {"schedules": [], "callback": {"type": "queue", "queue": "q"}}
    assert (
        session_client.put("/api/jobs/k/", body, content_type="application/json").status_code == 403
    )
    assert session_client.delete("/api/schedules/daily/").status_code == 403
    token = csrf_token(session_client)
    response = session_client.delete("/api/schedules/daily/", headers={"X-CSRFToken": token})
    assert response.status_code == 204


def test_an_admin_action_without_a_csrf_token_is_refused(world, session_client):
    response = session_client.post(
        "/admin/purchases/scheduledpurchase/",
        {"action": "cancel_rows", "_selected_action": [world.ids["scheduled-purchases"]]},
    )
    assert response.status_code == 403


def test_token_authentication_needs_no_csrf_token(world, superuser_token):
    client = Client(enforce_csrf_checks=True)
    path = BULK_PATHS[0]
    response = client.post(
        path,
        bulk_body(path),
        content_type="application/json",
        headers={"Authorization": f"Token {superuser_token}"},
    )
    assert response.status_code == 200


# --- Client identity: the connecting address, unless the deployment names its proxies ---------

TOKEN = "/api/auth/token/"
WRONG = {"username": "root", "password": "not-the-password"}


def wrong_passwords(forwarded_for: list[str], remote_addr: str = "198.51.100.7") -> list[int]:
    api = APIClient(REMOTE_ADDR=remote_addr)
    return [
        api.post(TOKEN, WRONG, format="json", HTTP_X_FORWARDED_FOR=header).status_code
        for header in forwarded_for
    ]


@pytest.fixture
def throttle_only(settings):
    """The token throttle alone: django-axes' lockout (tests/security/test_sign_in_lockout.py)
    would answer 429 first."""
    settings.AXES_ENABLED = False


def test_a_rotating_forwarded_for_header_does_not_reset_the_token_budget(superuser, throttle_only):
    answers = wrong_passwords([f"203.0.113.{n}" for n in range(40)])

    assert answers == [400] * 20 + [429] * 20


def test_with_a_trusted_proxy_the_address_it_appended_is_the_client(
    superuser, throttle_only, settings
):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    # What the client wrote comes first; the proxy appends the address it saw.
    spoofed = [f"203.0.113.{n}, 192.0.2.1" for n in range(21)]

    assert wrong_passwords(spoofed) == [400] * 20 + [429]
    assert wrong_passwords(["192.0.2.2"]) == [400]  # another client, its own budget


def test_client_address_follows_the_throttle_rule(settings):
    from django.test import RequestFactory

    from project.client_ip import client_address

    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR="1.2.3.4")
    assert client_address(request) == "10.0.0.5"
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    assert client_address(request) == "1.2.3.4"
    junk = RequestFactory().get("/", REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR="not-an-ip")
    assert client_address(junk) == "10.0.0.5"
