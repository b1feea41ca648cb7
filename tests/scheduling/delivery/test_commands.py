import json
from datetime import timedelta
from functools import partial
from io import StringIO

import pytest
from celery import current_app
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.utils import timezone

from tests.conftest import UNREACHABLE_REDIS_CACHE
from tests.factories import ScheduledPingFactory, make_due_pings
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@override_settings(SCHEDULING_BATCH_SIZE=10, SCHEDULING_TIME_BUDGET=0.001)
def test_sweep_without_loop_drains_everything_due_then_exits(broker):
    make_due_pings(25)

    output = run("sweep")

    assert "testapp.ScheduledPing: delivered=25" in output
    assert broker.llen("testapp") == 25


def test_sweep_refuses_an_unknown_label():
    with pytest.raises(
        CommandError, match=r"'nope\.Model' is not a scheduled model; expected one of"
    ):
        run("sweep", "nope.Model")


def test_scheduling_status_reports_backlog_and_history(broker):
    ScheduledPingFactory(due_at=timezone.now() - timedelta(minutes=10))
    ScheduledPingFactory(due_at=timezone.now() + timedelta(hours=1))
    ScheduledPingFactory(status="failed")
    delivered = ScheduledPingFactory(status="delivered", delivered_at=timezone.now())
    assert delivered.pk

    reports = json.loads(run("scheduling_status", "--json"))

    (report,) = [item for item in reports if item["model"] == "testapp.ScheduledPing"]
    assert (report["pending"], report["due_now"]) == (2, 1)
    assert report["oldest_due_lateness_s"] >= 600
    assert (report["delivered_last_hour"], report["failed_last_hour"]) == (1, 1)
    assert "model=testapp.ScheduledPing pending=2 due_now=1" in run("scheduling_status")


def test_healthz_reports_each_dependency(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "redis": "ok", "broker": "ok"}


@override_settings(CACHES=UNREACHABLE_REDIS_CACHE)
def test_healthz_answers_503_naming_what_is_down(client):
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["redis"].startswith("down")
    assert response.json()["database"] == "ok"


def test_healthz_answers_503_when_the_broker_is_down(client, monkeypatch):
    # A broker address nobody listens on: the connection is refused at once.
    unreachable = partial(current_app.connection_for_write, "redis://127.0.0.1:1/0")
    monkeypatch.setattr(current_app, "connection_for_write", unreachable)

    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["broker"].startswith("down")
    assert response.json()["redis"] == "ok"


def test_every_scheduled_model_gets_a_beat_entry_per_slot():
    from scheduling.rows.registry import beat_schedule, get_scheduled_model, queue_names

    with override_settings(SCHEDULING_SWEEPER_SLOTS=2, SCHEDULING_SWEEP_INTERVAL=0.5):
        entries = beat_schedule()
    mine = {name: entry for name, entry in entries.items() if "ScheduledPing " in name}
    assert sorted(entry["kwargs"]["slot"] for entry in mine.values()) == [0, 1]
    entry = next(iter(mine.values()))
    assert (entry["task"], entry["args"], entry["schedule"]) == (
        "scheduling.sweep",
        ("testapp.ScheduledPing",),
        0.5,
    )
    assert entry["options"]["queue"] == "scheduling"
    assert get_scheduled_model("testapp.scheduledping") is ScheduledPing
    assert {"scheduling", "testapp"} <= set(queue_names())
