"""The wheel beside Django 6.1 on Python 3.13: installing it keeps the host's Django, and a host
project with `TASKS` on SchedulingBackend runs django.tasks' @task functions with a stock
`celery -A host worker -B`: after their `run_after`, once, with results read back by
`get_result()`, retries by the jobs' backoff, and nothing left by an enqueue rolled back.

The host is test_wheel's (tests/packaging/host/) plus tests/packaging/tasks_host/: its settings
additions and shop/work.py, as docs/django-tasks.md shows them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.packaging.test_wheel import (
    host_environment,
    manager,
    run,
    scratch_database,
    start_worker,
    stop,
    write_host_project,
)

TASKS_TEMPLATE = Path(__file__).parent / "tasks_host"
GUIDE = Path(__file__).parents[2] / "docs" / "django-tasks.md"
DJANGO = "django~=6.1.0"
# The test's own settings, after the guide's block (not in it: a project keeps the defaults): a
# failed task is tried again after about a second, twice in all.
TEST_ONLY_SETTINGS = """
SCHEDULING_RETRY_BACKOFF = 1
SCHEDULING_MAX_ATTEMPTS = 2
"""

ENQUEUE = """
import json
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from scheduling.jobs.models import Job
from shop.work import flaky, greet

try:
    with transaction.atomic():
        greet.enqueue("rolled back")
        raise RuntimeError("the request failed")
except RuntimeError:
    pass
run_after = timezone.now() + timedelta(seconds=3)
result = greet.using(run_after=run_after).enqueue("ada")
failing = flaky.enqueue()
print(json.dumps({
    "greet": result.id, "flaky": failing.id, "run_after": run_after.timestamp(),
    "jobs": Job.objects.count(), "status": result.status,
}))
"""

RESULTS = """
import json

from shop.work import flaky, greet

done, failed = greet.get_result({greet!r}), flaky.get_result({flaky!r})
print(json.dumps({{
    "status": done.status, "attempts": done.attempts,
    "value": done.return_value if done.status == "SUCCESSFUL" else None,
    "failed": failed.status, "failed attempts": failed.attempts,
    "errors": [error.exception_class_path for error in failed.errors],
}}))
"""


def python313() -> Path:
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = sorted(root.glob("versions/3.13*/bin/python3.13"))
    on_path = shutil.which("python3.13")
    candidates = [*found, *([Path(on_path)] if on_path else [])]
    if not candidates:
        pytest.fail("Python 3.13 is needed (pyenv's, or python3.13 on PATH)")
    return candidates[0]


def django_61_virtualenv(path: Path, wheel: Path) -> Path:
    """Django 6.1 first, as a host project has it; then the wheel, which must leave it."""
    run([str(python313()), "-m", "venv", str(path)])
    python = path / "bin" / "python"
    run([str(python), "-m", "pip", "install", "-q", DJANGO, "psycopg[binary]"])
    run([str(python), "-m", "pip", "install", "-q", str(wheel)])
    return python


def write_tasks_host(python: Path, project: Path) -> None:
    write_host_project(python, project)
    shutil.copyfile(TASKS_TEMPLATE / "shop" / "work.py", project / "shop" / "work.py")
    with open(project / "host" / "settings.py", "a") as settings_file:
        settings_file.write("\n" + (TASKS_TEMPLATE / "settings_additions.txt").read_text())
        settings_file.write(TEST_ONLY_SETTINGS)


@pytest.mark.slow
def test_a_django_61_host_runs_enqueued_tasks(wheel: Path, tmp_path: Path) -> None:
    python = django_61_virtualenv(tmp_path / "venv", wheel)
    version = run([str(python), "-c", "import django; print(django.get_version())"])
    assert version.strip().startswith("6.1"), version
    project = tmp_path / "hostproject"
    write_tasks_host(python, project)
    effects = tmp_path / "effects.txt"
    effects.touch()

    with scratch_database() as database:
        env = host_environment(database, effects)

        manage = manager(python, project, env)
        manage("makemigrations", "shop")
        manage("migrate", "--no-input")
        assert "System check identified no issues" in manage("check")
        enqueued = json.loads(manage("shell", "-c", ENQUEUE).splitlines()[-1])
        assert (enqueued["jobs"], enqueued["status"]) == (2, "READY")  # not the rolled-back one

        log = tmp_path / "worker.log"
        worker = start_worker(python, project, env, log, tmp_path / "beat-schedule")
        try:
            answers = wait_for_results(manage, enqueued, worker, log)
        finally:
            stop(worker)

    lines = effects.read_text().splitlines()
    assert [line.rsplit(" ", 1)[0] for line in lines] == ["greet ada"], log.read_text()
    assert float(lines[0].rsplit(" ", 1)[1]) >= enqueued["run_after"]
    assert answers == {
        "status": "SUCCESSFUL",
        "value": "hello ada",
        "attempts": 1,
        "failed": "FAILED",
        "failed attempts": 2,
        "errors": ["builtins.RuntimeError", "builtins.RuntimeError"],
    }, log.read_text()


def wait_for_results(
    manage: Callable[..., str],
    enqueued: dict[str, Any],
    worker: subprocess.Popen[bytes],
    log: Path,
) -> dict[str, Any]:
    """The results once both tasks are finished (the failing one after its retry), and three
    seconds more, in which a second run would show."""
    ask = RESULTS.format(greet=enqueued["greet"], flaky=enqueued["flaky"])
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert worker.poll() is None, f"the worker exited:\n{log.read_text()}"
        answers = json.loads(manage("shell", "-c", ask).splitlines()[-1])
        if answers["status"] == "SUCCESSFUL" and answers["failed"] == "FAILED":
            time.sleep(3)
            return dict(json.loads(manage("shell", "-c", ask).splitlines()[-1]))
        time.sleep(1)
    raise AssertionError(f"the tasks did not finish in time:\n{log.read_text()}")


def test_the_guide_shows_the_tasks_host_the_test_builds() -> None:
    shown = {}
    for block in re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.DOTALL):
        heading, _, body = block.partition("\n")
        shown[heading.removeprefix("# ")] = body

    assert shown["shop/work.py"] == (TASKS_TEMPLATE / "shop" / "work.py").read_text()
    settings_additions = (TASKS_TEMPLATE / "settings_additions.txt").read_text()
    assert shown["host/settings.py, at the end (the tasks' additions)"] == settings_additions
