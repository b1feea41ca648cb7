"""Overlap policies, counted schedules, pauses and DST policies through real sweeps, on real
PostgreSQL and Redis."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from scheduling.delivery.handling.once import handle_once
from scheduling.recurring.models import RecurringSchedule, ScheduledOccurrence
from scheduling.recurring.services import schedules_repair
from scheduling.rows.actors import actor
from scheduling.rows.history.record import written_for
from tests.conftest import CURRENT_TIME, queued_messages
from tests.scheduling.recurring.conftest import (
    celery_body,
    json_bodies,
    make_schedule,
    pending,
    sweep_at,
    sweep_until_idle,
)

pytestmark = pytest.mark.django_db

Status = ScheduledOccurrence.Status


def at(hour: int, minute: int, second: int = 0) -> datetime:
    return CURRENT_TIME.replace(hour=hour, minute=minute, second=second)


def published_events(broker) -> list[dict[str, Any]]:
    return [celery_body(message)[1]["event"] for message in queued_messages(broker, "celery")]


def publish_at(now: datetime) -> None:
    """A sweep at `now`. The database stamps delivered_at with its own clock; the tests' clock
    is CURRENT_TIME, so the rows it published are stamped with `now`, as in production."""
    sweep_at(now)
    ScheduledOccurrence.objects.filter(status=Status.DELIVERED, delivered_at__gt=now).update(
        delivered_at=now
    )


def task_schedule(**fields: Any) -> RecurringSchedule:
    return make_schedule(queue="", task="reports.build", **fields)


# --- overlap ----------------------------------------------------------------------------------


def test_skip_leaves_a_fire_unpublished_while_its_predecessor_is_unhandled(broker):
    schedule = task_schedule(overlap_policy="skip")
    publish_at(at(12, 1))
    [first] = published_events(broker)

    publish_at(at(12, 2))

    assert len(published_events(broker)) == 1
    skipped = schedule.occurrences.get(due_at=at(12, 2))
    assert skipped.status == Status.CANCELLED
    assert skipped.cancel_reason.startswith(f"overlap_policy skip: occurrence {first['pk']} ")
    [entry] = written_for(ScheduledOccurrence, skipped.pk).filter(kind="cancelled")
    assert entry.detail["overlap_policy"] == "skip"
    assert entry.detail["waiting_for"] == first["pk"]
    assert [row.due_at for row in pending(schedule)] == [at(12, 3)]

    with handle_once(first):
        pass
    publish_at(at(12, 3))

    assert [event["data"]["scheduled_for"] for event in published_events(broker)] == [
        "2026-11-22T12:01:00Z",
        "2026-11-22T12:03:00Z",
    ]


def test_allow_publishes_every_fire_whether_or_not_handled(broker):
    task_schedule()
    for minute in (1, 2, 3):
        publish_at(at(12, minute))

    assert len(published_events(broker)) == 3


def test_buffer_one_holds_one_fire_until_its_predecessor_is_handled(broker):
    schedule = task_schedule(overlap_policy="buffer_one")
    publish_at(at(12, 1))
    [first] = published_events(broker)

    publish_at(at(12, 2))
    publish_at(at(12, 5))  # still unhandled: the same fire waits, no other joins it

    [held] = pending(schedule)
    assert held.business_due_at == at(12, 2)
    assert held.due_at == at(12, 5, 1)
    [entry] = written_for(ScheduledOccurrence, held.pk).filter(kind="rescheduled")
    assert entry.detail["overlap_policy"] == "buffer_one"
    assert entry.detail["waiting_for"] == first["pk"]
    assert len(published_events(broker)) == 1

    with handle_once(first):
        pass
    publish_at(at(12, 5, 1))

    second = published_events(broker)[1]["data"]
    assert second["scheduled_for"] == "2026-11-22T12:02:00Z"  # its own fire time
    assert second["id"] == f"{schedule.name}-{int(at(12, 2).timestamp())}"
    # The fire times that passed while it waited are not sent: the next is the next minute.
    assert [row.due_at for row in pending(schedule)] == [at(12, 6)]


def test_buffer_one_lets_the_held_fire_go_once_the_predecessor_passes_its_handling_timeout(
    broker,
):
    schedule = task_schedule(overlap_policy="buffer_one")
    publish_at(at(12, 1))
    publish_at(at(12, 2))
    assert len(published_events(broker)) == 1

    timeout = timedelta(seconds=ScheduledOccurrence.get_handling_timeout())
    publish_at(at(12, 1) + timeout + timedelta(seconds=2))

    assert len(published_events(broker)) == 2
    assert schedule.occurrences.get(business_due_at=at(12, 2)).status == Status.DELIVERED


# --- max_fires ----------------------------------------------------------------------------------


def test_max_fires_3_fires_three_times_then_the_schedule_is_finished(broker):
    schedule = make_schedule(max_fires=3)

    for minute in range(1, 7):
        sweep_until_idle(at(12, minute))

    assert [body["scheduled_for"] for body in json_bodies(broker, "reports")] == [
        "2026-11-22T12:01:00Z",
        "2026-11-22T12:02:00Z",
        "2026-11-22T12:03:00Z",
    ]
    schedule.refresh_from_db()
    assert schedule.fire_count == 3
    assert pending(schedule) == []
    assert schedules_repair() == 0
    assert pending(schedule) == []


def test_a_fire_all_catch_up_stops_at_max_fires(broker):
    make_schedule(
        misfire_policy="fire_all", starts_at=CURRENT_TIME - timedelta(hours=1), max_fires=5
    )

    sweep_until_idle(CURRENT_TIME)

    assert len(json_bodies(broker, "reports")) == 5


def test_raising_max_fires_of_a_finished_schedule_lets_it_fire_again(broker):
    schedule = make_schedule(max_fires=1)
    sweep_until_idle(at(12, 1))
    schedule.refresh_from_db()
    assert pending(schedule) == []

    with time_machine.travel(at(12, 1, 30), tick=False):
        schedule.max_fires = 2
        schedule.save()

    assert [row.due_at for row in pending(schedule)] == [at(12, 2)]


# --- pause and resume ---------------------------------------------------------------------------


def test_a_pause_records_when_who_and_why_and_resuming_clears_it():
    schedule = make_schedule()

    with time_machine.travel(at(12, 0, 30), tick=False), actor("alice"):
        schedule.enabled = False
        schedule.paused_note = "supplier migration"
        schedule.save()
    schedule.refresh_from_db()
    assert (schedule.paused_at, schedule.paused_by) == (at(12, 0, 30), "alice")
    assert schedule.paused_note == "supplier migration"

    with time_machine.travel(at(12, 10), tick=False):
        schedule.enabled = True
        schedule.save()
    schedule.refresh_from_db()
    assert (schedule.paused_at, schedule.paused_by, schedule.paused_note) == (None, "", "")


def pause_then_resume(schedule: RecurringSchedule, paused: datetime, resumed: datetime) -> None:
    with time_machine.travel(paused, tick=False):
        schedule.enabled = False
        schedule.save()
    with time_machine.travel(resumed, tick=False):
        schedule.enabled = True
        schedule.save()


def test_resume_skip_leaves_the_paused_fires_out(broker):
    schedule = make_schedule(cron="*/10 * * * *")
    pause_then_resume(schedule, at(12, 0, 30), at(12, 35))

    sweep_until_idle(at(12, 35))

    assert json_bodies(broker, "reports") == []
    assert [row.due_at for row in pending(schedule)] == [at(12, 40)]


def test_resume_catch_up_publishes_the_paused_fires_within_the_catch_up_window(broker):
    schedule = make_schedule(
        cron="*/10 * * * *", resume_policy="catch_up", catchup_window=timedelta(minutes=20)
    )
    pause_then_resume(schedule, at(12, 0, 30), at(12, 35))

    sweep_until_idle(at(12, 35))

    # 12:10 is older than the 20-minute window; 12:20 and 12:30 are caught up.
    assert [body["scheduled_for"] for body in json_bodies(broker, "reports")] == [
        "2026-11-22T12:20:00Z",
        "2026-11-22T12:30:00Z",
    ]
    assert [row.due_at for row in pending(schedule)] == [at(12, 40)]


# --- DST through the sweep ----------------------------------------------------------------------

NY_SPRING = datetime(2026, 3, 8, 4, tzinfo=UTC)  # 23:00 EST on the 7th
NY_AUTUMN = datetime(2026, 11, 1, 4, tzinfo=UTC)  # 00:00 EDT


def fired_through(broker, schedule_fields: dict[str, Any], start: datetime) -> list[str]:
    """Create the schedule at `start`, sweep every 30 minutes for five hours: its fire times."""
    with time_machine.travel(start, tick=False):
        RecurringSchedule.objects.create(
            name="dst",
            queue="reports",
            starts_at=start,
            timezone="America/New_York",
            **schedule_fields,
        )
    for step in range(1, 11):
        sweep_until_idle(start + step * timedelta(minutes=30))
    return [body["scheduled_for"] for body in json_bodies(broker, "reports")]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ({"dst_gap_policy": "shift"}, ["2026-03-08T07:00:00Z"]),  # 03:00 EDT, at the jump
        ({"dst_gap_policy": "skip"}, []),
    ],
)
def test_the_spring_gap_in_new_york_through_the_sweep(broker, policy, expected):
    assert fired_through(broker, {"cron": "30 2 * * *", **policy}, NY_SPRING) == expected


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ({}, ["2026-11-01T05:30:00Z"]),  # auto: fixed-time, once (01:30 EDT)
        ({"dst_repeat_policy": "once"}, ["2026-11-01T05:30:00Z"]),
        ({"dst_repeat_policy": "twice"}, ["2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z"]),
    ],
)
def test_the_repeated_hour_in_new_york_through_the_sweep(broker, policy, expected):
    assert fired_through(broker, {"cron": "30 1 * * *", **policy}, NY_AUTUMN) == expected
