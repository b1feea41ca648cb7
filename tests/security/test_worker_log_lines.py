"""One line per task event in a real worker's log: django.tasks' "Task id=... state=..." lines
(its started and finished signals) come out once each, not once per handler on the way up:
in the demo (its LOGGING) and in a host on Django's default logging, where Django 6's
"django.tasks" logger sits under "django" and its console handler."""

import subprocess
import sys
from pathlib import Path

import pytest
from django.utils import timezone

from purchases.refunds import send_refund_confirmation
from scheduling.delivery.sweep.run import sweep
from scheduling.jobs.models import ScheduledJobRun
from tests.conftest import ROOT, stop_process, wait_for
from tests.purchases.factories import PurchaseFactory

pytestmark = pytest.mark.django_db(transaction=True)


def start_worker(env: dict[str, str], log: Path, *options: str) -> subprocess.Popen[bytes]:
    """`celery -A project worker` as an operator starts it (the prefork pool by default)."""
    command = [sys.executable, "-m", "celery", "-A", "project", "worker", "-Q", "celery"]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat", *options]
    with open(log, "w") as out:
        return subprocess.Popen(command, env=env, cwd=ROOT, stdout=out, stderr=out)


def lines_naming(log: Path, result_id: str) -> list[str]:
    return [line for line in log.read_text().splitlines() if f"Task id={result_id} " in line]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("options", "log_format"),
    [
        (("-c", "1", "-l", "info"), "text"),
        (("-B", "-c", "1", "-l", "info"), "json"),
    ],
    ids=["prefork", "prefork -B json"],
)
def test_each_task_event_is_one_line_of_the_worker_log(
    subprocess_env, tmp_path, options, log_format
):
    # The demo's own task: a worker runs only the @task functions its installed apps define.
    result = send_refund_confirmation.enqueue(PurchaseFactory().pk)
    assert sweep(ScheduledJobRun, now=timezone.now()).delivered == 1
    log = tmp_path / "worker.log"
    if "-B" in options:  # beat's schedule file in the test's folder, not the checkout
        options = (*options, "-s", str(tmp_path / "celerybeat-schedule"))
    worker = start_worker({**subprocess_env, "LOG_FORMAT": log_format}, log, *options)
    try:
        wait_for(lambda: send_refund_confirmation.get_result(result.id).status == "SUCCESSFUL")
        wait_for(lambda: len(lines_naming(log, result.id)) >= 2)
    finally:
        stop_process(worker)

    states = [line.rsplit("state=", 1)[1].strip('"}') for line in lines_naming(log, result.id)]
    assert states == ["RUNNING", "SUCCESSFUL"], log.read_text()


# A host's settings: the demo's, on Django's default logging (no LOGGING of its own) and
# Celery's defaults, as the host guide's project has them.
HOST_SETTINGS = """
from project.settings import *

LOGGING = {}
DEBUG = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = True
"""

# What a worker does to logging as it starts (celery.apps.worker), then one django.tasks line.
AS_A_WORKER = """
import logging
import django

django.setup()
from project.celery import app

app.log.setup(loglevel="INFO", redirect_stdouts=True)
logging.getLogger("django.tasks").info("Task id=1 path=shop.work.greet state=RUNNING")
"""


def test_a_host_on_djangos_default_logging_logs_a_django_tasks_line_once(tmp_path):
    (tmp_path / "host_settings.py").write_text(HOST_SETTINGS)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{tmp_path}:{ROOT}"}
    env |= {"DJANGO_SETTINGS_MODULE": "host_settings", "RUN_DIR": str(tmp_path)}

    done = subprocess.run(
        [sys.executable, "-c", AS_A_WORKER], env=env, cwd=ROOT, capture_output=True, text=True
    )

    assert done.returncode == 0, done.stderr
    output = done.stdout + done.stderr
    assert output.count("Task id=1 path=shop.work.greet state=RUNNING") == 1, output
