"""The real path: Celery beat ticks the sweep, a worker process runs it, an every-second Quartz
schedule publishes one plain JSON message per second, each with its fire time's id."""

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from scheduling.recurring import RecurringSchedule, ScheduledOccurrence
from tests.conftest import ROOT, start_worker, stop_process, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

RUN = os.environ["TEST_REDIS_PAIR"]


def start_beat(env: dict[str, str], state: Path) -> subprocess.Popen[bytes]:
    log_path = ROOT / ".run" / f"recurring-beat-{RUN}.log"
    log_path.parent.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "celery", "-A", "project", "beat", "-s", str(state)]
    with open(log_path, "w") as log:
        return subprocess.Popen([*command, "-l", "info"], env=env, cwd=ROOT, stdout=log, stderr=log)


def published(body: dict[str, str]) -> datetime:
    return datetime.fromisoformat(body["published_at"].replace("Z", "+00:00"))


def test_an_every_second_schedule_publishes_one_message_per_second(
    subprocess_env, broker, tmp_path
):
    schedule = RecurringSchedule.objects.create(
        name="ticker", cron="* * * * * ?", queue="ticks", payload_template={"at": "${processTime}"}
    )
    worker = start_worker(subprocess_env, "scheduling", f"recurring-worker-{RUN}")
    beat = start_beat(subprocess_env, tmp_path / "beat-schedule")
    try:
        wait_for(lambda: broker.llen("ticks") >= 6, timeout=90)
    finally:
        stop_process(beat)
        stop_process(worker)

    bodies = [json.loads(raw) for raw in reversed(broker.lrange("ticks", 0, -1))]
    fire_times = [datetime.fromisoformat(body["scheduled_for"]) for body in bodies]
    first = fire_times[0]
    # Every second from the first, none twice, none missing, in order.
    assert fire_times == [first + timedelta(seconds=i) for i in range(len(bodies))]
    assert [body["id"] for body in bodies] == [f"ticker-{int(t.timestamp())}" for t in fire_times]
    assert all(body["payload"]["at"].startswith(body["scheduled_for"][:19]) for body in bodies)
    lateness = [published(body) - fire for body, fire in zip(bodies, fire_times, strict=True)]
    assert min(lateness) >= timedelta(0), "published before its fire time"
    # Once beat and the worker are in their stride, each second goes out within its tick.
    assert max(lateness[-3:]) < timedelta(seconds=2), lateness
    delivered = schedule.occurrences.filter(status=ScheduledOccurrence.Status.DELIVERED)
    assert delivered.count() == len(bodies)
    assert schedule.occurrences.filter(status="pending").count() == 1
