"""The sweep's heartbeat: each sweep, idle or busy, leaves the time it ended in the counters'
store; /healthz, the dashboard and /metrics say "no sweep for N s" past
SCHEDULING_HEALTH_MAX_SWEEP_AGE, whether or not rows are due. Idle sweepers log a line a minute.
"""

import logging
import re
from datetime import timedelta

import pytest
import time_machine
from django.contrib import admin
from django.test import RequestFactory
from django.utils import timezone

from scheduling.delivery.metrics.logs import SWEEPS_ALIVE, SweepsAlive
from scheduling.delivery.sweep.run import sweep
from scheduling.ops.admin.dashboard import dashboard_payload
from tests.factories import ScheduledPingFactory
from tests.ops.helpers import PING, TOKEN, scrape, value
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db

SILENCE = 125  # seconds since the last sweep, past the limit below


@pytest.fixture(autouse=True)
def limits(settings):
    settings.SCHEDULING_METRICS_TOKEN = TOKEN
    settings.SCHEDULING_HEALTH_MAX_SWEEP_AGE = 60
    settings.SCHEDULING_HEALTH_MAX_LATENESS = 600  # a due row below is not late by this rule


def swept_long_ago() -> None:
    """An idle sweep SILENCE seconds ago, and none since (beat died then)."""
    with time_machine.travel(timezone.now() - timedelta(seconds=SILENCE), tick=False):
        sweep(ScheduledPing)


def ping_row(payload: dict) -> dict:
    return next(m for m in payload["models"] if m["model"] == PING)


@pytest.mark.parametrize("due_rows", [0, 2])
def test_healthz_says_no_sweep_for_n_seconds_with_or_without_due_rows(client, due_rows):
    for _ in range(due_rows):
        ScheduledPingFactory(due_at=timezone.now() - timedelta(seconds=5))
    swept_long_ago()

    answer = client.get("/healthz")

    sweep_line = answer.json()["sweep"]
    assert re.fullmatch(rf"{PING}: no sweep for 12[5-9] s \(limit 60 s\)", sweep_line), sweep_line
    assert answer.status_code == 200  # the web itself is fine: docs/operations.md


def test_healthz_says_nothing_of_sweeps_once_a_sweep_ran_again(client):
    swept_long_ago()
    sweep(ScheduledPing)

    assert "sweep" not in client.get("/healthz").json()


def test_a_model_never_swept_is_not_reported_silent(client):
    """A new install before its first sweep: there is no heartbeat to judge by."""
    assert "sweep" not in client.get("/healthz").json()


@pytest.mark.parametrize("due_rows", [0, 2])
def test_the_dashboard_puts_an_unswept_model_in_alarm(admin_user, due_rows):
    for _ in range(due_rows):
        ScheduledPingFactory(due_at=timezone.now() - timedelta(seconds=5))
    swept_long_ago()
    request = RequestFactory().get("/admin/scheduling/dashboard/data/")
    request.user = admin_user

    payload = dashboard_payload(request, admin.site)

    row = ping_row(payload)
    assert row["not_swept"] is True
    assert SILENCE <= row["seconds_since_last_sweep"] < SILENCE + 10
    assert any(
        re.fullmatch(r"Not swept: no sweep for 12[5-9] s \(limit 60 s\)", text)
        for text in row["alarms"]
    ), row["alarms"]
    assert payload["in_alarm"] >= 1


def test_the_dashboard_shows_a_recent_sweep_without_alarm(admin_user):
    sweep(ScheduledPing)
    request = RequestFactory().get("/admin/scheduling/dashboard/data/")
    request.user = admin_user

    row = ping_row(dashboard_payload(request, admin.site))

    assert row["not_swept"] is False
    assert 0 <= row["seconds_since_last_sweep"] < 10
    assert not any(text.startswith("Not swept") for text in row["alarms"])


@pytest.mark.parametrize("due_rows", [0, 2])
def test_metrics_give_the_seconds_since_the_last_sweep(client, due_rows):
    for _ in range(due_rows):
        ScheduledPingFactory(due_at=timezone.now() - timedelta(seconds=5))
    swept_long_ago()

    samples = scrape(client)

    assert SILENCE <= value(samples, "scheduling_seconds_since_last_sweep") < SILENCE + 10


def test_an_idle_sweeper_logs_one_line_a_minute(caplog):
    alive = SweepsAlive()
    with caplog.at_level(logging.INFO, logger="scheduling.sweep"):
        for _ in range(5):
            alive.tick(PING, 0.002)
        first = [r.getMessage() for r in caplog.records]
        started, ticks = alive.since[PING]
        alive.since[PING] = (started - 61, ticks)  # a minute on
        alive.tick(PING, 0.003)

    lines = [r.getMessage() for r in caplog.records]
    assert first == [f"sweeper alive: {PING} swept 1 times so far, the last sweep took 0.002 s"]
    assert lines[1:] == [
        f"sweeper alive: {PING} swept 5 times in the last 61 s, the last sweep took 0.003 s"
    ]


def test_an_idle_sweep_leaves_its_heartbeat_and_its_line(client, caplog):
    SWEEPS_ALIVE.since.pop(PING, None)  # this process's first sweep of the model
    with caplog.at_level(logging.INFO, logger="scheduling.sweep"):
        sweep(ScheduledPing)

    assert value(scrape(client), "scheduling_seconds_since_last_sweep") < 10
    assert [r.getMessage()[:40] for r in caplog.records if "alive" in r.getMessage()] == [
        f"sweeper alive: {PING} swept 1 times so far"[:40]
    ]
