"""Fail loud, in real processes: a worker, beat or `sweep --loop` with a bad setting exits at
once with one line naming it; a scheduled model without the app installed is an Error."""

import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

LINE = "SCHEDULING_BATCH_SIZE='lots' is not valid: expected an integer from 1 to 100,000."
BAD_SETTING = {
    "PATH": "/usr/bin:/bin",
    "DJANGO_SETTINGS_MODULE": "project.settings",
    "SCHEDULING_BATCH_SIZE": "lots",
}


def started(tmp_path, *command: str) -> subprocess.CompletedProcess[str]:
    env = {**BAD_SETTING, "RUN_DIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, *command], env=env, cwd=ROOT, capture_output=True, text=True, timeout=10
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        ("-m", "celery", "-A", "project", "worker", "-B"),
        ("-m", "celery", "-A", "project", "beat", "-s", "{tmp}/beat-schedule"),
    ],
    ids=["worker -B", "beat"],
)
def test_celery_refuses_to_start_with_one_line(tmp_path, command):
    done = started(tmp_path, *(part.format(tmp=tmp_path) for part in command))

    assert done.returncode != 0
    assert done.stderr.splitlines() == [LINE]


@pytest.mark.slow
def test_sweep_loop_refuses_to_start_with_one_line(tmp_path):
    done = started(tmp_path, "manage.py", "sweep", "--loop")

    assert done.returncode != 0
    assert done.stderr.splitlines() == [f"CommandError: {LINE}"]


GUEST_MODELS = """
    from scheduling.rows.models import ScheduledEvent

    class Reminder(ScheduledEvent):
        handler_task = "guest.remind"
"""
CHECK_WITHOUT_SCHEDULING = """
    import django
    from django.conf import settings
    from django.core.management import call_command

    settings.configure(INSTALLED_APPS=["django.contrib.contenttypes", "guest"], USE_TZ=True)
    django.setup()
    call_command("check")
"""


def test_a_scheduled_model_without_the_app_installed_is_named_by_its_own_check(tmp_path):
    (tmp_path / "guest").mkdir()
    (tmp_path / "guest" / "__init__.py").write_text("")
    (tmp_path / "guest" / "models.py").write_text(textwrap.dedent(GUEST_MODELS))
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{tmp_path}:{ROOT}"}
    command = [sys.executable, "-c", textwrap.dedent(CHECK_WITHOUT_SCHEDULING)]

    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True)

    assert done.returncode != 0
    assert "guest.Reminder: (scheduling.E005) guest.Reminder is a scheduled model" in done.stderr
    assert "'scheduling' is not in INSTALLED_APPS" in done.stderr
