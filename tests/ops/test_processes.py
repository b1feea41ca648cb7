"""Real processes: a `manage.py sweep` and a Celery worker write the counters, the web (the
Django test client, in this process) serves them; /healthz follows delivery."""

import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from scheduling.delivery.tasks import sweep_task
from tests.conftest import ROOT, manage, start_worker, stop_process, wait_for
from tests.factories import PingFactory, ScheduledPingFactory, make_due_pings
from tests.ops.helpers import PING, TOKEN, scrape, value
from tests.testapp.models import PingEffect, ScheduledPing

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def metrics_token(settings):
    settings.SCHEDULING_METRICS_TOKEN = TOKEN


def run_sweep(env: dict[str, str]) -> str:
    process = manage(env, "sweep", "testapp.ScheduledPing")
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    return output


def test_counters_from_a_separate_sweeper_and_worker_show_in_the_webs_metrics(
    client, subprocess_env
):
    env = {**subprocess_env, "SCHEDULING_RETRY_BACKOFF": "0.2"}
    make_due_pings(20, ago=timedelta(seconds=30))
    ScheduledPingFactory(ping=PingFactory(name="fail:1"))  # its first handling fails
    worker = start_worker(env, "testapp", "ops-metrics-worker")
    try:
        run_sweep(env)
        wait_for(lambda: PingEffect.objects.count() == 20)
        wait_for(lambda: ScheduledPing.objects.filter(attempts=1, status="pending").exists())
        time.sleep(0.3)  # the failed event's backoff
        run_sweep(env)
        wait_for(lambda: PingEffect.objects.count() == 21)
    finally:
        stop_process(worker)

    samples = scrape(client)

    assert value(samples, "scheduling_published_total") == 22
    assert value(samples, "scheduling_handled_total") == 21
    assert value(samples, "scheduling_handle_failures_total") == 1
    assert value(samples, "scheduling_redelivered_total") == 1
    assert value(samples, "scheduling_publish_lateness_seconds_count") == 22
    assert value(samples, "scheduling_sweep_duration_seconds_count") >= 2
    assert value(samples, "scheduling_due_rows") == 0
    assert value(samples, "scheduling_awaiting_handling_rows") == 0
    ended = value(samples, "scheduling_last_sweep_timestamp_seconds")
    assert 0 <= datetime.now(UTC).timestamp() - ended < 60


def test_healthz_turns_503_when_due_rows_wait_too_long_and_200_after_a_sweep(
    client, subprocess_env, settings
):
    settings.SCHEDULING_HEALTH_MAX_LATENESS = 60
    ScheduledPingFactory(due_at=timezone.now() - timedelta(seconds=30))
    assert client.get("/healthz").status_code == 200  # due, not late yet

    ScheduledPingFactory(due_at=timezone.now() - timedelta(minutes=2))
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["delivery"].startswith(f"late: {PING} 12")
    assert response.json()["database"] == "ok"

    run_sweep(subprocess_env)

    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "redis": "ok", "broker": "ok"}


def test_a_worker_logs_nothing_for_idle_sweeps_and_one_json_line_per_published_batch(
    subprocess_env,
):
    env = {**subprocess_env, "LOG_FORMAT": "json", "LOG_LEVEL": "INFO"}
    worker = start_worker(env, "scheduling", "ops-logs-worker")
    log_path = ROOT / ".run" / "ops-logs-worker.log"
    try:
        for _ in range(3):
            sweep_task.apply_async(("testapp.ScheduledPing",), queue="scheduling")
        pks = make_due_pings(5, ago=timedelta(seconds=1))
        sweep_task.apply_async(("testapp.ScheduledPing",), queue="scheduling")
        wait_for(lambda: "succeeded" in log_path.read_text())
    finally:
        stop_process(worker)

    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    about_sweeps = [line for line in lines if "scheduling.sweep" in line["message"]]
    assert len(about_sweeps) == 1, about_sweeps  # the one that delivered: "succeeded ..."
    sweep_lines = [line for line in lines if line["logger"] == "scheduling.sweep"]
    alive = [line for line in sweep_lines if line["message"].startswith("sweeper alive")]
    assert len(alive) <= 1  # the sweeper's liveness line, at most one a minute
    (batch,) = [line for line in sweep_lines if line not in alive]
    assert batch["level"] == "INFO"
    assert (batch["model"], batch["count"]) == (PING, 5)
    assert batch["event_ids"] == [f"{PING}:{pk}:v1" for pk in pks]
    assert batch["first_event_id"] == f"{PING}:{pks[0]}:v1"
    assert batch["lateness_max_s"] >= 1
