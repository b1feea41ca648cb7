"""Production settings (DEBUG off) pass Django's deployment checks."""

import os
import subprocess
import sys

from django.test import Client

from tests.conftest import ROOT

STRONG_KEY = "k3y-" + "Zq8#vT2!mW9pL4xR7nB1cY6hJ0sD5gF3aE8uK2oI7" * 2


def test_production_settings_pass_check_deploy():
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DEBUG": "0",
        "SECRET_KEY": STRONG_KEY,
        "ALLOWED_HOSTS": "scheduling.example.com",
    }
    command = [
        sys.executable,
        str(ROOT / "manage.py"),
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
    ]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_healthz_is_not_redirected_to_https(db, settings):
    settings.SECURE_SSL_REDIRECT = True
    client = Client()
    assert client.get("/healthz").status_code in (200, 503)
    assert client.get("/api/jobs/").status_code == 301
