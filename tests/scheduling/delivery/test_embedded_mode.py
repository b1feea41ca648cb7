"""The embedded mode (no PostgreSQL, no Redis) still delivers: SQLite, filesystem broker."""

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, start_worker, stop_process, wait_for

pytestmark = pytest.mark.slow

CREATE_DUE_ROWS = """
from datetime import timedelta
from django.utils import timezone
from tests.testapp.models import Ping, ScheduledPing
for name in ("first", "second", "third"):
    ScheduledPing.objects.create(ping=Ping.objects.create(name=name), due_at=timezone.now() - timedelta(seconds=1))
"""
COUNT_EFFECTS = "from tests.testapp.models import PingEffect; print(PingEffect.objects.count())"


def run(env, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def embedded_env(tmp_path, **extra: str) -> dict[str, str]:
    """The environment of the embedded mode: SQLite and a filesystem broker in `tmp_path`."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'embedded.sqlite3'}",
        "REDIS_URL": "",
        "CELERY_BROKER_URL": "filesystem://",
        "RUN_DIR": str(tmp_path),
        **extra,
    }


def test_the_embedded_mode_sweeps_and_a_worker_handles(tmp_path):
    env = embedded_env(tmp_path)
    run(env, "migrate", "-v", "0")
    run(env, "shell", "-v", "0", "-c", CREATE_DUE_ROWS)

    assert "delivered=3" in run(env, "sweep", "testapp.ScheduledPing")

    worker = start_worker(env, "testapp", "test-worker-embedded")
    try:
        wait_for(
            lambda: run(env, "shell", "-v", "0", "-c", COUNT_EFFECTS).strip() == "3",
            timeout=90,
            interval=1,
        )
    finally:
        stop_process(worker)
