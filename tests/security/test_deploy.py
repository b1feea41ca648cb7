"""The production settings docs/operations.md documents pass Django's deployment checks."""

import os
import re
import secrets
import subprocess
import sys

import pytest
from django.test import Client

from tests.conftest import ROOT

PROXY_HEADER = "SECURE_PROXY_SSL_HEADER"
# Settings the environment of the test run may have set; the check must see their defaults.
HARDENING = re.compile(r"^(DEBUG|SECRET_KEY|ALLOWED_HOSTS|CSRF_.*|SECURE_.*|SESSION_COOKIE_.*)$")


def documented_environment() -> dict[str, str]:
    """The block under "Production settings" in docs/operations.md, its placeholders filled."""
    text = (ROOT / "docs" / "operations.md").read_text()
    section = text.split("## Production settings", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None, "docs/operations.md has no environment block to deploy with"
    pairs = (line.split("=", 1) for line in block.group(1).splitlines() if line.strip())
    return {
        name: secrets.token_urlsafe(50) if value.startswith("<") else value for name, value in pairs
    }


def check_deploy(environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    inherited = {name: value for name, value in os.environ.items() if not HARDENING.match(name)}
    env = {**inherited, **environment, "DJANGO_SETTINGS_MODULE": "project.settings"}
    command = [
        sys.executable,
        str(ROOT / "manage.py"),
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
    ]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def test_the_documented_environment_holds_the_production_essentials():
    assert {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", PROXY_HEADER} <= set(documented_environment())
    assert documented_environment()["DEBUG"] == "0"


@pytest.mark.parametrize("behind_a_proxy", [True, False], ids=["behind-a-tls-proxy", "direct"])
def test_the_documented_production_settings_pass_check_deploy(behind_a_proxy):
    environment = documented_environment()
    if not behind_a_proxy:
        del environment[PROXY_HEADER]

    result = check_deploy(environment)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout + result.stderr


def test_a_weak_secret_key_fails_the_check():
    """The check really runs with these settings: Django's own warning about the key shows."""
    result = check_deploy({**documented_environment(), "SECRET_KEY": "short"})

    assert result.returncode != 0
    assert "security.W009" in result.stdout + result.stderr


def test_healthz_is_not_redirected_to_https(db, settings):
    settings.SECURE_SSL_REDIRECT = True
    client = Client()
    assert client.get("/healthz").status_code in (200, 503)
    assert client.get("/api/jobs/").status_code == 301
