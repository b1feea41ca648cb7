"""Jitter: each fire due at a stable offset in [t, t + jitter) after its planned time t, through
real sweeps on real PostgreSQL and Redis; the planned time kept in processTime, the id and the
history; overlap, catch-up, DST and calendars applied to the planned times."""

import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling.delivery.handling.once import handle_once
from scheduling.recurring.jitter import MAX_JITTER, jitter_offset, jittered
from scheduling.recurring.models import RecurringSchedule, ScheduledOccurrence
from scheduling.recurring.services import occurrence_skip, schedules_repair
from scheduling.rows.history.timeline import timeline
from scheduling.time.calendars.models import Calendar
from tests.conftest import CURRENT_TIME
from tests.scheduling.recurring.conftest import (
    json_bodies,
    make_schedule,
    sweep_at,
    sweep_until_idle,
)
from tests.scheduling.recurring.test_policies import publish_at, published_events, task_schedule
from tests.scheduling.recurring.test_schedule_admin import form_data

pytestmark = pytest.mark.django_db

Status = ScheduledOccurrence.Status
URL = "/api/schedules/"
SCHEDULES = "/admin/scheduling_recurring/recurringschedule/"


def at(hour: int, minute: int, second: int = 0) -> datetime:
    return CURRENT_TIME.replace(hour=hour, minute=minute, second=second)


def head(schedule: RecurringSchedule) -> ScheduledOccurrence:
    [row] = schedule.occurrences.filter(status=Status.PENDING, manual=False, catch_up=False)
    return row


def scheduled_for(broker, queue: str = "reports") -> list[str]:
    return [body["scheduled_for"] for body in json_bodies(broker, queue)]


# --- the offset ---------------------------------------------------------------------------------


def test_the_offset_is_within_the_jitter_and_never_before_the_planned_time():
    planned = [at(12, 0) + timedelta(minutes=n) for n in range(2000)]
    offsets = [jitter_offset("nightly", t, 30) for t in planned]

    assert all(timedelta(0) <= offset < timedelta(seconds=30) for offset in offsets)
    assert len(set(offsets)) > 1900  # to the microsecond: hardly two alike
    assert jitter_offset("nightly", at(12, 0), 0) == timedelta(0)


def test_the_offset_is_the_same_in_another_process_and_in_any_zone():
    local = jittered("nightly", at(12, 0), 60)
    code = (
        "from datetime import datetime, timezone, timedelta;"
        "from scheduling.recurring.jitter import jittered;"
        "t = datetime(2026, 11, 22, 13, 0, tzinfo=timezone(timedelta(hours=1)));"
        "print(jittered('nightly', t, 60).astimezone(timezone.utc).isoformat())"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    ).stdout.strip()

    assert other == local.isoformat()


def test_ten_thousand_schedules_on_one_cron_spread_over_the_minute():
    due = [jittered(f"schedule-{n}", at(0, 0), 60) for n in range(10_000)]
    per_second = Counter(int((when - at(0, 0)).total_seconds()) for when in due)

    assert sorted(per_second) == list(range(60))
    assert max(per_second.values()) < 300  # about 167 a second, against 10,000 in one


# --- through the sweep ----------------------------------------------------------------------------


def test_each_fire_is_due_within_the_jitter_and_keeps_its_planned_time(broker):
    schedule = make_schedule(jitter=30, payload_template={"at": "${processTime}"})

    for minute in (1, 2, 3):
        row = head(schedule)
        assert row.business_time == at(12, minute)
        assert at(12, minute) <= row.due_at < at(12, minute, 30)
        assert row.due_at == jittered(schedule.name, at(12, minute), 30)
        if row.due_at > at(12, minute):
            assert sweep_at(row.due_at - timedelta(microseconds=1)).delivered == 0  # never early
        assert sweep_at(row.due_at).delivered == 1

    bodies = json_bodies(broker, "reports")
    planned = [at(12, minute) for minute in (1, 2, 3)]
    assert [body["scheduled_for"] for body in bodies] == [
        t.isoformat().replace("+00:00", "Z") for t in planned
    ]
    assert [body["id"] for body in bodies] == [
        f"{schedule.name}-{int(t.timestamp())}" for t in planned
    ]
    assert [body["payload"]["at"] for body in bodies] == [
        f"2026-11-22T12:0{minute}:00.000+00:00" for minute in (1, 2, 3)
    ]
    schedule.refresh_from_db()
    assert schedule.last_fired_at == at(12, 3)  # the planned time, not the jittered one
    delivered = schedule.occurrences.filter(status=Status.DELIVERED).order_by("due_at")
    assert [row.business_time for row in delivered] == planned
    for row, t in zip(delivered, planned, strict=True):  # the history: scheduled for t
        entries = {entry.kind: entry for entry in timeline(row)}
        assert entries["scheduled"].detail["due_at"] == t.isoformat()
        late = (row.delivered_at - t).total_seconds()
        assert entries["published"].detail["late_by_seconds"] == pytest.approx(late, abs=0.001)


@pytest.mark.usefixtures("frozen_clock")
def test_skipping_a_jittered_fire_materialises_the_next_at_its_own_offset():
    schedule = make_schedule(jitter=30)

    assert occurrence_skip(occurrence=head(schedule))

    assert head(schedule).business_time == at(12, 2)
    assert head(schedule).due_at == jittered(schedule.name, at(12, 2), 30)


@pytest.mark.usefixtures("frozen_clock")
def test_a_replan_keeps_each_fire_at_the_same_offset():
    schedule = make_schedule(jitter=30)
    first = head(schedule).due_at

    schedule.payload_template = {"edited": True}  # a new version: the pending row is replaced
    schedule.save()
    assert schedule.version == 2
    assert head(schedule).due_at == first

    ScheduledOccurrence.objects.filter(schedule=schedule).delete()  # lost, around the ORM
    assert schedules_repair() == 1  # recomputed from scratch
    assert head(schedule).due_at == first

    schedule.jitter = 0  # a jitter edit replans too, to the planned time
    schedule.save()
    assert head(schedule).due_at == at(12, 1)
    assert head(schedule).business_due_at is None


def test_overlap_skip_applies_to_the_planned_times(broker):
    schedule = task_schedule(overlap_policy="skip", jitter=30)
    publish_at(at(12, 1, 30))
    [first] = published_events(broker)

    publish_at(at(12, 2, 30))  # 12:02 is due, the 12:01 fire is not handled: skipped
    assert schedule.occurrences.get(status=Status.CANCELLED).business_time == at(12, 2)
    with handle_once(first):
        pass
    publish_at(at(12, 3, 30))

    assert [event["data"]["scheduled_for"] for event in published_events(broker)] == [
        "2026-11-22T12:01:00Z",
        "2026-11-22T12:03:00Z",
    ]
    assert head(schedule).business_time == at(12, 4)


def test_buffer_one_holds_a_jittered_fire_and_goes_on_after_the_hold(broker):
    schedule = task_schedule(overlap_policy="buffer_one", jitter=30)
    publish_at(at(12, 1, 30))
    [first] = published_events(broker)
    publish_at(at(12, 2, 30))
    publish_at(at(12, 5))  # still unhandled: the 12:02 fire waits

    held = head(schedule)
    assert held.business_time == at(12, 2)
    assert held.due_at == at(12, 5, 1)
    with handle_once(first):
        pass
    publish_at(at(12, 5, 1))

    second = published_events(broker)[1]["data"]
    assert second["scheduled_for"] == "2026-11-22T12:02:00Z"
    # The fire times that passed while it waited are not sent: the next is 12:06, jittered.
    assert head(schedule).business_time == at(12, 6)
    assert at(12, 6) <= head(schedule).due_at < at(12, 6, 30)


def test_a_fire_all_catch_up_publishes_every_missed_planned_time(broker):
    schedule = make_schedule(jitter=30, misfire_policy="fire_all")
    sweep_at(at(12, 1, 30))  # 12:01 sent, then down until 12:05:45

    sweep_until_idle(at(12, 5, 45))

    assert scheduled_for(broker) == [f"2026-11-22T12:0{minute}:00Z" for minute in range(1, 6)]
    assert head(schedule).business_time == at(12, 6)


NY_SPRING = datetime(2026, 3, 8, 5, 0, tzinfo=UTC)  # midnight EST


def test_the_spring_gap_shift_applies_to_the_planned_time(broker):
    with time_machine.travel(NY_SPRING, tick=False):
        RecurringSchedule.objects.create(
            name="dst",
            queue="reports",
            cron="30 2 * * *",
            timezone="America/New_York",
            starts_at=NY_SPRING,
            jitter=600,
        )
    for step in range(1, 11):
        sweep_until_idle(NY_SPRING + step * timedelta(minutes=30))

    assert scheduled_for(broker) == ["2026-03-08T07:00:00Z"]  # 03:00 EDT, at the jump
    [fired] = ScheduledOccurrence.objects.filter(status=Status.DELIVERED)
    assert (
        datetime(2026, 3, 8, 7, tzinfo=UTC)
        <= fired.due_at
        < datetime(2026, 3, 8, 7, 10, tzinfo=UTC)
    )


def test_a_holiday_calendar_skips_the_planned_time(broker):
    Calendar.objects.create(
        name="us-holidays",
        timezone="America/New_York",
        holiday_rules=["FREQ=YEARLY;BYMONTH=11;BYDAY=4TH"],
    )
    schedule = make_schedule(
        cron="0 9 * * MON-FRI",
        timezone="America/New_York",
        calendars=["us-holidays"],
        jitter=300,
    )

    for day in (23, 24, 25, 26, 27):  # Thanksgiving is the 26th; each sweep after the jitter
        sweep_at(datetime(2026, 11, day, 14, 5, tzinfo=UTC))

    assert scheduled_for(broker) == [f"2026-11-{day}T14:00:00Z" for day in (23, 24, 25, 27)]
    assert head(schedule).business_time == datetime(2026, 11, 30, 14, tzinfo=UTC)


def test_a_batch_of_jittered_fires_costs_the_same_queries_as_a_few(broker):
    def sweep_queries(now: datetime) -> int:
        with CaptureQueriesContext(connection) as queries:
            assert sweep_at(now).delivered > 0
        return len(queries)

    for _ in range(5):
        make_schedule(jitter=30)
    few = sweep_queries(at(12, 1, 30))
    for _ in range(45):
        make_schedule(jitter=30)

    # 50 published, each successor inserted: the planned times are read in one query for the
    # batch, none a row.
    assert sweep_queries(at(12, 2, 30)) == few
    assert ScheduledOccurrence.objects.filter(status=Status.DELIVERED).count() == 55


# --- input --------------------------------------------------------------------------------------


@pytest.mark.parametrize("jitter", [-1, MAX_JITTER + 1])
def test_the_model_refuses_a_jitter_out_of_bounds(jitter):
    with pytest.raises(ValidationError) as refused:
        make_schedule(jitter=jitter)

    assert (
        "jitter must be a whole number of seconds from 0" in refused.value.message_dict["jitter"][0]
    )
    assert "86,400 (one day)" in refused.value.message_dict["jitter"][0]


@pytest.mark.usefixtures("frozen_clock")
def test_the_api_takes_a_jitter_and_refuses_a_bad_one_naming_the_bound(api):
    valid = {"name": "spread", "cron": "0 0 * * *", "queue": "q", "jitter": 60}
    response = api.post(URL, valid, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["jitter"] == 60
    assert api.get(URL + "spread/").json()["jitter"] == 60

    for bad in (-5, MAX_JITTER + 1, "soon", 1.5):
        response = api.patch(URL + "spread/", {"jitter": bad}, format="json")
        assert response.status_code == 400, (bad, response.content)
        assert "from 0 (no jitter) to 86,400 (one day)" in " ".join(response.json()["jitter"])
    assert RecurringSchedule.objects.get(name="spread").jitter == 60


@pytest.mark.usefixtures("frozen_clock")
def test_the_admin_form_takes_a_jitter_and_refuses_a_bad_one(admin_client):
    assert 'name="jitter"' in admin_client.get(SCHEDULES + "add/").content.decode()

    response = admin_client.post(SCHEDULES + "add/", form_data(jitter="90"))
    assert response.status_code == 302
    schedule = RecurringSchedule.objects.get(name="nightly")
    assert schedule.jitter == 90
    assert head(schedule).business_time == datetime(2026, 11, 23, 2, tzinfo=UTC)

    response = admin_client.post(SCHEDULES + "add/", form_data(name="other", jitter="-1"))
    assert response.status_code == 200
    assert "from 0 (no jitter) to 86,400 (one day)" in response.content.decode()
    assert not RecurringSchedule.objects.filter(name="other").exists()


@pytest.mark.usefixtures("frozen_clock")
def test_a_jitter_longer_than_the_gap_between_fire_times_is_refused_naming_the_gap(api):
    every_minute = {"name": "minutely", "cron": "* * * * *", "queue": "q"}
    assert api.post(URL, {**every_minute, "jitter": 60}, format="json").status_code == 201

    response = api.patch(URL + "minutely/", {"jitter": 61}, format="json")
    assert response.status_code == 400, response.content
    [message] = response.json()["jitter"]
    assert "at most the shortest gap between two fire times (60 s with cron '* * * * *')" in message

    response = api.patch(URL + "minutely/", {"cron": "0,1 * * * *", "jitter": 120}, format="json")
    assert response.status_code == 400  # 60 s between :00 and :01, however long the rest
    assert "(60 s with cron '0,1 * * * *')" in response.json()["jitter"][0]
