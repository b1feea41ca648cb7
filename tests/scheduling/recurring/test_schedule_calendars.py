"""Recurring schedules with calendars, through the real sweep: a holiday skipped, a weekend
moved to its end, a night window over a DST night, composition, and a calendar edit that
recomputes the pending fire. Real time zones throughout."""

from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError

from scheduling.recurring.models import RecurringSchedule
from scheduling.recurring.services import schedule_preview
from scheduling.time.calendars.models import Calendar
from tests.scheduling.recurring.conftest import json_bodies, make_schedule, pending, sweep_at

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("frozen_clock")]

WEEKDAYS_9AM = "0 9 * * MON-FRI"


def utc(*args):
    return datetime(*args, tzinfo=UTC)


def us_holidays(**fields):
    rules = ["FREQ=YEARLY;BYMONTH=11;BYDAY=4TH", "FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=25"]
    return Calendar.objects.create(
        **{"name": "us-holidays", "timezone": "America/New_York", "holiday_rules": rules, **fields}
    )


def fired_at(broker, queue="reports"):
    return [body["scheduled_for"] for body in json_bodies(broker, queue)]


def test_a_weekday_schedule_skips_the_holiday_and_fires_the_next_day(broker):
    us_holidays()
    schedule = make_schedule(
        cron=WEEKDAYS_9AM, timezone="America/New_York", calendars=["us-holidays"]
    )

    for day in (23, 24, 25, 26, 27):  # Monday to Friday, at 09:00 in New York (14:00 UTC)
        sweep_at(utc(2026, 11, day, 14))

    # Thursday the 26th is Thanksgiving, the fourth Thursday of November.
    assert fired_at(broker) == [
        "2026-11-23T14:00:00Z",
        "2026-11-24T14:00:00Z",
        "2026-11-25T14:00:00Z",
        "2026-11-27T14:00:00Z",
    ]
    assert [row.due_at for row in pending(schedule)] == [utc(2026, 11, 30, 14)]


def test_a_move_policy_fires_a_weekends_fires_once_at_its_end(broker):
    Calendar.objects.create(name="weekends", timezone="America/New_York", weekdays=["SAT", "SUN"])
    schedule = make_schedule(
        cron="0 9 * * *",
        timezone="America/New_York",
        calendars=["weekends"],
        calendar_policy="move",
    )

    sweep_at(utc(2026, 11, 27, 14))  # Friday 09:00 (the sweeps before it were missed: fire_once)
    assert [row.due_at for row in pending(schedule)] == [utc(2026, 11, 30, 5)]  # Monday 00:00

    sweep_at(utc(2026, 11, 30, 5))
    assert [row.due_at for row in pending(schedule)] == [utc(2026, 11, 30, 14)]  # Monday 09:00
    assert fired_at(broker)[-1] == "2026-11-30T05:00:00Z"


def test_a_night_window_over_a_dst_night_holds_the_fires_until_the_morning(broker):
    Calendar.objects.create(
        name="nights", timezone="America/New_York", daily_windows=["22:00-07:00"]
    )
    schedule = make_schedule(
        cron="0 * * * *",
        timezone="America/New_York",
        starts_at=utc(2027, 3, 14, 1, 30),  # 20:30 EST on Saturday 2027-03-13
        calendars=["nights"],
    )
    assert [row.due_at for row in pending(schedule)] == [utc(2027, 3, 14, 2)]  # 21:00 EST

    sweep_at(utc(2027, 3, 14, 2))

    # 22:00 EST to 07:00 EDT: eight hours, the clocks skip 02:00-03:00 on 2027-03-14.
    assert [row.due_at for row in pending(schedule)] == [utc(2027, 3, 14, 11)]
    assert fired_at(broker) == ["2027-03-14T02:00:00Z"]


def test_a_composed_calendar_applies_its_steps_in_order():
    Calendar.objects.create(name="weekends", timezone="Europe/Paris", weekdays=["SAT", "SUN"])
    Calendar.objects.create(name="open-saturday", timezone="Europe/Paris", holidays=["2026-11-28"])
    Calendar.objects.create(
        name="closed",
        timezone="Europe/Paris",
        composition=[
            {"op": "include", "calendar": "weekends"},
            {"op": "exclude", "calendar": "open-saturday"},
        ],
    )
    schedule = make_schedule(cron="0 9 * * *", timezone="Europe/Paris", calendars=["closed"])

    times = schedule_preview(schedule=schedule, count=5, after=utc(2026, 11, 26))

    assert times == [
        utc(2026, 11, 26, 8),
        utc(2026, 11, 27, 8),
        utc(2026, 11, 28, 8),  # the open Saturday
        utc(2026, 11, 30, 8),  # Sunday skipped
        utc(2026, 12, 1, 8),
    ]


def test_a_composition_cycle_is_refused():
    Calendar.objects.create(name="a", composition=[])
    Calendar.objects.create(name="b", composition=[{"op": "include", "calendar": "a"}])
    a = Calendar.objects.get(name="a")
    a.composition = [{"op": "include", "calendar": "b"}]

    with pytest.raises(ValidationError) as refused:
        a.save()

    assert "a cycle: a -> b -> a" in refused.value.message_dict["composition"][0]


def test_editing_a_calendar_recomputes_the_pending_fire():
    us_holidays(holiday_rules=[])
    schedule = make_schedule(
        cron=WEEKDAYS_9AM, timezone="America/New_York", calendars=["us-holidays"]
    )
    assert [row.due_at for row in pending(schedule)] == [utc(2026, 11, 23, 14)]

    calendar = Calendar.objects.get(name="us-holidays")
    calendar.holidays = ["2026-11-23"]
    calendar.save()

    schedule.refresh_from_db()
    assert schedule.version == 2
    assert [row.due_at for row in pending(schedule)] == [utc(2026, 11, 24, 14)]


def test_a_calendar_in_use_cannot_be_deleted_nor_renamed():
    calendar = us_holidays()
    make_schedule(name="report", calendars=["us-holidays"])

    with pytest.raises(ValidationError, match="in use by schedule report"):
        calendar.delete()
    calendar.name = "holidays"
    with pytest.raises(ValidationError, match="in use by schedule report"):
        calendar.save()
    assert Calendar.objects.filter(name="us-holidays").exists()


def test_a_schedule_naming_an_unknown_calendar_is_refused():
    with pytest.raises(ValidationError) as refused:
        make_schedule(calendars=["nowhere"])

    assert "No calendar is named nowhere" in refused.value.message_dict["calendars"][0]
    assert not RecurringSchedule.objects.exists()
