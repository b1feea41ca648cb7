"""Settings that follow how the site is run: embedded mode for manage.py, the site URL's port."""

import os
import subprocess
import sys

from tests.conftest import ROOT

SHOW = (
    "from django.conf import settings as s; "
    "print(s.DATABASES['default']['ENGINE'], repr(s.REDIS_URL), s.CELERY_BROKER_URL, "
    "s.PURCHASES_SITE_URL)"
)


def settings_with(tmp_path, **env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL")}
    environment = {**clean, "DJANGO_SETTINGS_MODULE": "project.settings", "RUN_DIR": str(tmp_path)}
    command = [sys.executable, str(ROOT / "manage.py"), "shell", "-c", SHOW]
    done = subprocess.run(
        command, env={**environment, **env}, capture_output=True, text=True, check=True
    )
    return done.stdout.strip().splitlines()[-1].split()  # the last line: what SHOW prints


def test_scheduling_embedded_applies_to_manage_py(tmp_path):
    engine, redis, broker, _ = settings_with(tmp_path, SCHEDULING_EMBEDDED="1")

    assert engine == "django.db.backends.sqlite3"
    assert (redis, broker) == ("''", "filesystem://")


def test_the_email_links_follow_the_port_unless_the_site_url_is_set(tmp_path):
    assert settings_with(tmp_path, PORT="9001")[-1] == "http://localhost:9001"
    site = "https://shop.example.com"
    assert settings_with(tmp_path, PORT="9001", PURCHASES_SITE_URL=site)[-1] == site
