"""Sage Bionetworks' Bridge Master Scheduler, replaced: its cron expressions, request templates
and catch-up after downtime, run through real sweeps on PostgreSQL and Redis.

Sources of the vectors below (transcribed, not copied):
- github.com/Sage-Bionetworks/BridgeMasterScheduler: TemplateVariableTest.java (each
  variable at one process time, in the Seattle zone the scheduler assumed) and
  BridgeMasterSchedulerTest.java (Quartz crons read in UTC, `lastProcessedTime` 18:30-07:00,
  now 19:00-07:00, the first run "an hour ago", the requests sent).
- The three schedulers whose requests the Master Scheduler's templates reproduce, each test's
  own example: github.com/Sage-Bionetworks/Bridge-EX-Scheduler (BridgeExporterSchedulerTest),
  Bridge-Reporter-Scheduler (BridgeReporterSchedulerTest), Bridge-FitBit-Scheduler
  (BridgeFitBitSchedulerTest). The design page ("Master Scheduler", Bridge wiki) could be read
  only in its opening; the templates below are written from the requests these schedulers
  built, with the Master Scheduler's variables, and render to their tests' expectations.
"""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling.delivery.publishing import make_publisher
from scheduling.delivery.sweep.batch import sweep_batch
from scheduling.recurring.models import RecurringSchedule, ScheduledOccurrence
from scheduling.recurring.services import occurrence_skip
from scheduling.recurring.templates import render
from scheduling.rows.conf import scheduling_settings
from tests.scheduling.recurring.conftest import json_bodies, pending, sweep_at, sweep_until_idle

pytestmark = pytest.mark.django_db

SEATTLE = "America/Los_Angeles"
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)


def schedule_at(created: datetime, **fields: Any) -> RecurringSchedule:
    """A Bridge-style schedule: Quartz cron read in UTC, a plain JSON queue target."""
    values = {"timezone": "UTC", "queue": "bridge", "starts_at": created, **fields}
    with time_machine.travel(created, tick=False):
        return RecurringSchedule.objects.create(**values)


def payloads(broker, queue: str = "bridge") -> list[Any]:
    return [body["payload"] for body in json_bodies(broker, queue)]


# --- template variables (TemplateVariableTest) ----------------------------------------------


PROCESS_TIME = datetime(2018, 3, 28, 4, 21, 45, 862000, tzinfo=UTC)


@pytest.mark.parametrize(
    ("template", "rendered"),
    [
        ("${endOfPreviousDay}", "2018-03-26T23:59:59.999-07:00"),
        ("${processTime}", "2018-03-27T21:21:45.862-07:00"),
        ("${startOfDay}", "2018-03-27T00:00:00.000-07:00"),
        ("${startOfDayOneWeekAgo}", "2018-03-20T00:00:00.000-07:00"),
        ("${startOfHour}", "2018-03-27T21:00:00.000-07:00"),
        ("${startOfPreviousDay}", "2018-03-26T00:00:00.000-07:00"),
        ("${todaysDate}", "2018-03-27"),
        ("${yesterdaysDate}", "2018-03-26"),
        ("before ${yesterdaysDate} after", "before 2018-03-26 after"),
        ("${yesterdaysDate} ${yesterdaysDate}", "2018-03-26 2018-03-26"),
    ],
)
def test_each_bridge_variable_renders_as_bridge_renders_it_in_seattle(template, rendered):
    assert render(template, fire_time=PROCESS_TIME, tz=SEATTLE, schedule_name="s") == rendered


# --- the Master Scheduler's own runs (BridgeMasterSchedulerTest) ----------------------------


LAST_PROCESSED = datetime(2018, 3, 28, 1, 30, tzinfo=UTC)  # 2018-03-27T18:30-07:00
NOW = datetime(2018, 3, 28, 2, 0, tzinfo=UTC)  # 2018-03-27T19:00-07:00


def bridge_schedule(name: str, cron: str, template: str, **fields: Any) -> RecurringSchedule:
    """Created when Bridge last processed: its window (lastProcessedTime, now] is ours."""
    return schedule_at(
        LAST_PROCESSED,
        name=name,
        cron=cron,
        payload_template=template,
        template_timezone=SEATTLE,
        misfire_policy="fire_all",
        **fields,
    )


def test_basic_case_cron_in_utc_and_the_template_in_seattle(broker):
    bridge_schedule("schedule-1", "0 0,30 * * * ?", "${startOfPreviousDay}-${endOfPreviousDay}")

    sweep_until_idle(NOW)

    assert payloads(broker) == ["2018-03-26T00:00:00.000-07:00-2018-03-26T23:59:59.999-07:00"]


def test_multiple_schedules_each_send_their_own_request(broker):
    bridge_schedule("schedule-1", "0 0,30 * * * ?", "request-1 ${processTime}")
    bridge_schedule("schedule-2", "0 15,45 * * * ?", "request-2 ${processTime}")

    sweep_until_idle(NOW)

    assert sorted(payloads(broker)) == [
        "request-1 2018-03-27T19:00:00.000-07:00",
        "request-2 2018-03-27T18:45:00.000-07:00",
    ]


def test_a_schedule_sends_every_fire_time_in_the_window_each_with_its_process_time(broker):
    bridge_schedule("schedule-1", "0 0,15,30,45 * * * ?", "request-1 ${processTime}")

    sweep_until_idle(NOW)

    assert payloads(broker) == [
        "request-1 2018-03-27T18:45:00.000-07:00",
        "request-1 2018-03-27T19:00:00.000-07:00",
    ]


def test_no_fire_time_in_the_window_sends_nothing(broker):
    bridge_schedule("schedule-1", "0 15 * * * ?", "request-1 ${processTime}")

    sweep_until_idle(NOW)

    assert payloads(broker) == []


def test_the_first_run_starting_an_hour_ago_sends_that_hour(broker):
    # Bridge, never run before, processes [now - 1 hour, now]: here starts_at says so.
    schedule_at(
        NOW,
        name="schedule-1",
        cron="0 15 * * * ?",
        payload_template="request-1 ${processTime}",
        template_timezone=SEATTLE,
        misfire_policy="fire_all",
        starts_at=NOW - HOUR,
    )

    sweep_until_idle(NOW)

    assert payloads(broker) == ["request-1 2018-03-27T18:15:00.000-07:00"]


# --- the three retired schedulers' requests, as templates -----------------------------------


TOKYO_RUN = datetime(2016, 2, 1, 7, 47, 55, tzinfo=UTC)  # 2016-02-01T16:47:55+09:00


@pytest.mark.parametrize(
    ("name", "template", "sent"),
    [
        (
            "exporter-daily",
            {
                "useLastExportTime": True,
                "endDateTime": "${startOfDay}",
                "tag": "[scheduler=test-scheduler;date=${yesterdaysDate}]",
            },
            {
                "useLastExportTime": True,
                "endDateTime": "2016-02-01T00:00:00.000+09:00",
                "tag": "[scheduler=test-scheduler;date=2016-01-31]",
            },
        ),
        (
            "exporter-hourly",
            {
                "studyWhitelist": ["hourly-study"],
                "useLastExportTime": True,
                "endDateTime": "${startOfHour}",
                "tag": "[scheduler=test-scheduler;endDateTime=${startOfHour}]",
            },
            {
                "studyWhitelist": ["hourly-study"],
                "useLastExportTime": True,
                "endDateTime": "2016-02-01T16:00:00.000+09:00",
                "tag": "[scheduler=test-scheduler;endDateTime=2016-02-01T16:00:00.000+09:00]",
            },
        ),
        (
            "reporter-daily",
            {
                "service": "REPORTER",
                "body": {
                    "startDateTime": "${startOfPreviousDay}",
                    "endDateTime": "${endOfPreviousDay}",
                    "scheduler": "test-scheduler",
                    "scheduleType": "DAILY",
                },
            },
            {
                "service": "REPORTER",
                "body": {
                    "startDateTime": "2016-01-31T00:00:00.000+09:00",
                    "endDateTime": "2016-01-31T23:59:59.999+09:00",
                    "scheduler": "test-scheduler",
                    "scheduleType": "DAILY",
                },
            },
        ),
        (
            "reporter-weekly",
            {
                "service": "REPORTER",
                "body": {
                    "startDateTime": "${startOfDayOneWeekAgo}",
                    "endDateTime": "${endOfPreviousDay}",
                    "scheduler": "test-scheduler",
                    "scheduleType": "WEEKLY",
                },
            },
            {
                "service": "REPORTER",
                "body": {
                    "startDateTime": "2016-01-25T00:00:00.000+09:00",
                    "endDateTime": "2016-01-31T23:59:59.999+09:00",
                    "scheduler": "test-scheduler",
                    "scheduleType": "WEEKLY",
                },
            },
        ),
    ],
)
def test_exporter_and_reporter_requests_render_as_their_schedulers_sent_them(
    broker, name, template, sent
):
    # Their tests ran at 16:47:55 in Tokyo; the cron fires then, read in UTC.
    schedule_at(
        TOKYO_RUN - MINUTE,
        name=name,
        cron="55 47 7 * * ?",
        payload_template=template,
        template_timezone="Asia/Tokyo",
    )

    sweep_until_idle(TOKYO_RUN)

    assert payloads(broker) == [sent]


def test_the_fitbit_request_takes_yesterday_in_seattle_not_in_utc(broker):
    # 2017-12-18T07:00Z is 23:00 on the 17th in Seattle: yesterday there is the 16th.
    run = datetime(2017, 12, 18, 7, 0, tzinfo=UTC)
    template = {"service": "FitBitWorker", "body": {"date": "${yesterdaysDate}"}}
    schedule_at(
        run - HOUR,
        name="fitbit",
        cron="0 0 7 * * ?",
        payload_template=template,
        template_timezone=SEATTLE,
    )
    schedule_at(run - HOUR, name="fitbit-utc", cron="0 0 7 * * ?", payload_template=template)

    sweep_until_idle(run)

    by_schedule = {body["schedule"]: body["payload"] for body in json_bodies(broker, "bridge")}
    assert by_schedule == {
        "fitbit": {"service": "FitBitWorker", "body": {"date": "2017-12-16"}},
        "fitbit-utc": {"service": "FitBitWorker", "body": {"date": "2017-12-17"}},
    }


# --- catch-up after downtime ----------------------------------------------------------------


HOURLY_SINCE = datetime(2018, 3, 27, 12, 0, tzinfo=UTC)


def test_after_downtime_every_missed_fire_time_is_sent_with_its_own_process_time(broker):
    # The Master Scheduler's own cron: five past every hour.
    schedule = schedule_at(
        HOURLY_SINCE,
        name="hourly",
        cron="0 5 * * * ?",
        payload_template={"processTime": "${processTime}"},
        template_timezone=SEATTLE,
        misfire_policy="fire_all",
    )
    sweep_at(HOURLY_SINCE + timedelta(minutes=5))  # 12:05Z sent; then down until 17:30Z

    sweep_until_idle(HOURLY_SINCE + timedelta(hours=5, minutes=30))

    assert payloads(broker) == [
        {"processTime": f"2018-03-27T{hour:02}:05:00.000-07:00"} for hour in range(5, 11)
    ]
    ids = [body["id"] for body in json_bodies(broker, "bridge")]
    assert len(set(ids)) == 6
    assert [row.due_at for row in pending(schedule)] == [datetime(2018, 3, 27, 18, 5, tzinfo=UTC)]


def test_a_fire_all_schedule_starting_in_the_past_backfills_from_starts_at(broker):
    schedule_at(
        HOURLY_SINCE,
        name="backfill",
        cron="0 0 * * * ?",
        payload_template="${processTime}",
        template_timezone=SEATTLE,
        misfire_policy="fire_all",
        starts_at=HOURLY_SINCE - timedelta(hours=3),
    )

    sweep_until_idle(HOURLY_SINCE)

    assert payloads(broker) == [
        "2018-03-27T02:00:00.000-07:00",
        "2018-03-27T03:00:00.000-07:00",
        "2018-03-27T04:00:00.000-07:00",
        "2018-03-27T05:00:00.000-07:00",
    ]


def test_a_day_of_minutes_missed_is_inserted_in_bulk_and_all_sent(broker):
    created = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    schedule = schedule_at(
        created,
        name="every-minute",
        cron="* * * * *",
        payload_template={"at": "${processTime}"},
        misfire_policy="fire_all",
    )
    back = created + timedelta(days=1, seconds=30)

    with CaptureQueriesContext(connection) as queries:
        assert sweep_until_idle(back) == 1440

    insert = "INSERT INTO scheduled_occurrence"
    inserts = [q for q in queries if q["sql"].lstrip().startswith(insert)]
    # 1,439 missed fire times after the pending one, in chunks of SCHEDULING_BATCH_SIZE (1000).
    assert len(inserts) == 2
    sent = [body["scheduled_for"] for body in json_bodies(broker, "bridge")]
    expected = [created + (n + 1) * MINUTE for n in range(1440)]
    assert sent == [t.isoformat().replace("+00:00", "Z") for t in expected]
    assert [row.due_at for row in pending(schedule)] == [back - timedelta(seconds=30) + MINUTE]


def test_a_downtime_longer_than_the_catchup_window_sends_only_the_window(broker):
    created = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    schedule = schedule_at(
        created,
        name="hourly-window",
        cron="0 0 * * * ?",
        payload_template={},
        misfire_policy="fire_all",
        catchup_window=timedelta(hours=6),
    )
    back = created + timedelta(days=3, minutes=30)

    sweep_until_idle(back)

    sent = [body["scheduled_for"] for body in json_bodies(broker, "bridge")]
    assert sent == [f"2026-11-25T{hour:02}:00:00Z" for hour in range(7, 13)]
    first = schedule.occurrences.get(due_at=created + HOUR)
    assert first.status == "expired"


# --- versions: the distributed cron's rule --------------------------------------------------


def test_a_payload_edit_during_a_catch_up_leaves_no_occurrence_of_the_old_payload(broker):
    created = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    schedule = schedule_at(
        created,
        name="edited",
        cron="* * * * *",
        payload_template={"v": 1},
        misfire_policy="fire_all",
    )
    back = created + timedelta(minutes=30, seconds=30)
    one_batch(back)  # the first missed one sent, the other 29 inserted behind it
    first_batch = len(json_bodies(broker, "bridge"))

    with time_machine.travel(back, tick=False):
        schedule.payload_template = {"v": 2}
        schedule.save()
    sweep_until_idle(back + MINUTE)

    assert schedule.version == 2
    later = json_bodies(broker, "bridge")[first_batch:]
    assert [body["payload"] for body in later] == [{"v": 2}]
    assert first_batch == 1
    # The 29 missed ones still pending and the head (12:31) went with version 1.
    assert schedule.occurrences.filter(schedule_version=1, status="cancelled").count() == 30


def one_batch(now: datetime) -> None:
    publisher = make_publisher(5.0)
    try:
        with time_machine.travel(now, tick=False):
            conf = scheduling_settings()
            sweep_batch(ScheduledOccurrence, now=now, publisher=publisher, conf=conf)
    finally:
        publisher.close()


def test_skipping_a_catch_up_occurrence_skips_that_fire_time_only(broker):
    created = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    schedule = schedule_at(
        created, name="skippy", cron="* * * * *", payload_template={}, misfire_policy="fire_all"
    )
    back = created + timedelta(minutes=5, seconds=30)
    one_batch(back)  # 12:01 sent; 12:02-12:05 inserted as catch-up rows, 12:06 the head
    missed = schedule.occurrences.get(due_at=created + 3 * MINUTE)

    assert occurrence_skip(occurrence=missed) is True
    sweep_until_idle(back)

    sent = [body["scheduled_for"] for body in json_bodies(broker, "bridge")]
    assert sent == [f"2026-11-22T12:0{m}:00Z" for m in (1, 2, 4, 5)]
    assert [row.due_at for row in pending(schedule)] == [created + 6 * MINUTE]
