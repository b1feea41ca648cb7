"""A newcomer to the API: gets a token, finds every resource, reads the docs served locally."""

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_a_token_from_username_and_password_opens_the_api():
    User.objects.create_user("ann", password="s3cret", is_staff=True)
    client = APIClient()

    refused = client.post("/api/auth/token/", {"username": "ann", "password": "nope"})
    token = client.post("/api/auth/token/", {"username": "ann", "password": "s3cret"})
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.json()['token']}")
    root = client.get("/api/")

    assert refused.status_code == 400
    assert token.status_code == 200
    assert root.status_code == 200
    assert APIClient().get("/api/").status_code in (401, 403)


def test_the_token_endpoint_is_in_the_schema(admin_client):
    schema = admin_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()

    operation = schema["paths"]["/api/auth/token/"]["post"]
    assert "Authorization: Token" in operation["description"]


def test_the_api_root_lists_every_resource(admin_client):
    links = admin_client.get("/api/", HTTP_ACCEPT="application/json").json()

    for resource in (
        "jobs",
        "schedules",
        "purchases",
        "scheduled-purchases",
        "releases",
        "trainings",
        "scheduled-training-notifications",
        "events/testapp/scheduledping",
        "auth/token",
        "docs",
    ):
        assert resource in links, resource
    assert links["purchases"] == "http://testserver/api/purchases/"
    assert admin_client.get(links["trainings"]).status_code == 200


@pytest.mark.parametrize("page", ["/api/docs/", "/api/redoc/"])
def test_an_anonymous_visitor_of_the_docs_is_told_how_to_sign_in(page):
    response = Client().get(page)

    html = response.content.decode()
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Token realm="api"'
    assert f'href="/admin/login/?next={page}"' in html
    assert "http://testserver/api/auth/token/" in html
    assert "Authorization: Token" in html


@pytest.mark.parametrize("page", ["/api/docs/", "/api/redoc/"])
def test_signed_in_users_get_the_docs_from_local_static_files(admin_client, page):
    html = admin_client.get(page).content.decode()

    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any("drf_spectacular_sidecar" in source for source in sources), sources
    assert not [s for s in sources if s.startswith(("http:", "https:", "//"))], sources
    assert "fonts.googleapis" not in html
