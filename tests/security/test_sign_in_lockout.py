"""Failed sign-ins lock the client out, on the admin login and the token endpoint alike
(django-axes, AXES_FAILURE_LIMIT = 10 by default); an administrator lifts the lockout in the
admin. The client is the connecting address: a rotating X-Forwarded-For does not escape it."""

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

ATTACKER = "198.51.100.7"
ADMIN_LOGIN = "/admin/login/?next=/admin/"
TOKEN = "/api/auth/token/"
LOCKED = "Too many failed sign-ins from your address"


@pytest.fixture
def user(db: None) -> User:
    return User.objects.create_user("ann", password="s3cret-pass", is_staff=True)


def admin_sign_in(client: Client, password: str, n: int = 0) -> int:
    response = client.post(
        ADMIN_LOGIN,
        {"username": "ann", "password": password},
        HTTP_X_FORWARDED_FOR=f"203.0.113.{n % 250}",
    )
    return response.status_code


def lift_in_the_admin(superuser: User) -> None:
    admin = Client(REMOTE_ADDR="192.0.2.50")
    admin.force_login(superuser)
    listing = admin.get("/admin/axes/accessattempt/?locked_out=yes")
    assert ATTACKER in listing.content.decode()
    lockouts = list(AccessAttempt.objects.values_list("pk", flat=True))
    response = admin.post(
        "/admin/axes/accessattempt/",
        {"action": "delete_selected", "_selected_action": lockouts, "post": "yes"},
    )
    assert response.status_code == 302
    assert not AccessAttempt.objects.exists()


def test_the_admin_login_refuses_the_right_password_after_30_wrong_ones(user, superuser):
    client = Client(REMOTE_ADDR=ATTACKER)

    answers = [admin_sign_in(client, "wrong", n) for n in range(30)]
    right = client.post(ADMIN_LOGIN, {"username": "ann", "password": "s3cret-pass"})

    assert answers == [200] * 9 + [429] * 21  # the form again, then the lockout
    assert right.status_code == 429
    assert LOCKED in right.content.decode()
    assert "_auth_user_id" not in client.session


def test_the_lockout_is_listed_in_the_admin_and_lifted_there(user, superuser):
    client = Client(REMOTE_ADDR=ATTACKER)
    for n in range(10):
        admin_sign_in(client, "wrong", n)

    lift_in_the_admin(superuser)

    assert admin_sign_in(client, "s3cret-pass") == 302
    assert client.session["_auth_user_id"] == str(user.pk)


def test_the_token_endpoint_locks_out_alike_and_says_why(user, superuser):
    api = APIClient(REMOTE_ADDR=ATTACKER)

    def token(password: str, n: int = 0):
        body = {"username": "ann", "password": password}
        return api.post(TOKEN, body, format="json", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}")

    answers = [token("wrong", n).status_code for n in range(12)]
    right = token("s3cret-pass")

    assert answers == [400] * 9 + [429] * 3
    assert right.status_code == 429
    assert right.json()["detail"].startswith(LOCKED)
    lift_in_the_admin(superuser)
    assert token("s3cret-pass").status_code == 200


def test_failures_on_either_door_count_together(user):
    client = Client(REMOTE_ADDR=ATTACKER)
    api = APIClient(REMOTE_ADDR=ATTACKER)
    for n in range(5):
        admin_sign_in(client, "wrong", n)
        api.post(TOKEN, {"username": "ann", "password": "wrong"}, format="json")

    assert admin_sign_in(client, "s3cret-pass") == 429


def test_another_address_is_not_locked_out(user):
    client = Client(REMOTE_ADDR=ATTACKER)
    for n in range(10):
        admin_sign_in(client, "wrong", n)

    assert admin_sign_in(Client(REMOTE_ADDR="192.0.2.9"), "s3cret-pass") == 302


def test_an_overlong_username_is_refused_not_a_server_error(user):
    api = APIClient(REMOTE_ADDR=ATTACKER)
    token = api.post(TOKEN, {"username": "a" * 300, "password": "x"}, format="json")
    form = Client(REMOTE_ADDR=ATTACKER).post(ADMIN_LOGIN, {"username": "b" * 300, "password": "x"})

    assert token.status_code == 400
    assert "username" in token.json()
    assert form.status_code == 200  # the form again
    assert AccessAttempt.objects.get().username == "b" * 255
