from io import StringIO

import pytest
from django.core.management import call_command


def test_the_openapi_schema_builds_and_validates_without_warnings():
    out = StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    assert "openapi: 3" in out.getvalue()


@pytest.mark.django_db
def test_schema_and_docs_are_served(admin_client):
    assert admin_client.get("/api/schema/").status_code == 200
    assert admin_client.get("/api/docs/").status_code == 200
