"""SCHEDULING_MAX_CATCHUP_FIRES at fire time: a schedule saved before the cap (or under a
higher one) never publishes more than the cap in one catch-up; the older fire times of its
window are skipped, and the log says which."""

import logging
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from scheduling.recurring.conf import recurring_settings
from scheduling.recurring.models import RecurringSchedule
from scheduling.recurring.timeline import timeline_successors
from tests.scheduling.recurring.conftest import json_bodies, pending, sweep_until_idle

pytestmark = pytest.mark.django_db

CREATED = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def every_minute_fire_all() -> RecurringSchedule:
    with time_machine.travel(CREATED, tick=False):
        return RecurringSchedule.objects.create(
            name="every-minute",
            cron="* * * * *",
            queue="capped",
            starts_at=CREATED,
            misfire_policy="fire_all",
        )


def test_a_catch_up_publishes_at_most_the_cap_the_latest_fire_times(broker, settings, caplog):
    schedule = every_minute_fire_all()  # a day of minutes: 1,440 within its one-day window
    settings.SCHEDULING_MAX_CATCHUP_FIRES = 100
    back = CREATED + timedelta(days=1, seconds=30)

    with caplog.at_level(logging.WARNING, logger="scheduling.recurring.timeline"):
        published = sweep_until_idle(back)

    sent = [body["scheduled_for"] for body in json_bodies(broker, "capped")]
    assert 0 < len(sent) <= 100
    assert published >= len(sent)  # the first head, older than the cap allows, expires
    assert sent[-1] == "2026-11-23T12:00:00Z"  # the latest missed fire time is kept
    assert sent == sorted(sent)
    [skipped] = [r.getMessage() for r in caplog.records if "are skipped" in r.getMessage()]
    assert "recurring schedule every-minute: a catch-up publishes at most 100" in skipped
    assert [row.due_at for row in pending(schedule)] == [CREATED + timedelta(days=1) + MINUTE]


def test_a_catch_up_that_reached_the_cap_moves_on_to_the_next_fire_after_now(db):
    schedule = every_minute_fire_all()
    now = CREATED + timedelta(hours=2, seconds=30)
    conf = recurring_settings()

    successors = timeline_successors(
        schedule, after=CREATED, missed_run=conf.max_catchup_fires, now=now, conf=conf
    )

    assert [(s.due_at, s.missed_run, s.catch_up) for s in successors] == [
        (CREATED + timedelta(hours=2) + MINUTE, 0, False)
    ]


def test_a_catch_up_one_short_of_the_cap_publishes_one_more(db):
    schedule = every_minute_fire_all()
    now = CREATED + timedelta(hours=2, seconds=30)
    conf = recurring_settings()

    successors = timeline_successors(
        schedule, after=CREATED, missed_run=conf.max_catchup_fires - 1, now=now, conf=conf
    )

    assert [(s.due_at, s.missed_run) for s in successors] == [
        (CREATED + MINUTE, conf.max_catchup_fires)
    ]
