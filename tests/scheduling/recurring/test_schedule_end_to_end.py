"""The real path: Celery beat ticks the sweep, a worker process runs it, an every-second Quartz
schedule publishes one plain JSON message per second, each with its fire time's id."""

import json
import os
from datetime import datetime, timedelta

import pytest

from scheduling.recurring.models import RecurringSchedule, ScheduledOccurrence
from tests.conftest import start_beat, start_worker, stop_process, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

RUN = os.environ["TEST_REDIS_PAIR"]


def published(body: dict[str, str]) -> datetime:
    return datetime.fromisoformat(body["published_at"].replace("Z", "+00:00"))


def test_an_every_second_schedule_publishes_one_message_per_second(
    subprocess_env, broker, tmp_path
):
    schedule = RecurringSchedule.objects.create(
        name="ticker", cron="* * * * * ?", queue="ticks", payload_template={"at": "${processTime}"}
    )
    worker = start_worker(subprocess_env, "scheduling", f"recurring-worker-{RUN}")
    beat = start_beat(subprocess_env, tmp_path / "beat-schedule", f"recurring-beat-{RUN}")
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
    assert max(lateness[-3:]) < timedelta(seconds=3), lateness
    delivered = schedule.occurrences.filter(status=ScheduledOccurrence.Status.DELIVERED)
    assert delivered.count() == len(bodies)
    assert schedule.occurrences.filter(status="pending").count() == 1
