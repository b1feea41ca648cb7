"""DailyQuietHours over real time zones: crossing midnight, and the DST nights of
Europe/Paris in 2026 (clocks forward 02:00 -> 03:00 on 29 March, back 03:00 -> 02:00 on
25 October). It is a calendar's daily window (one rule for DST: every instant whose wall time
is inside is quiet), its spans given in its own zone. Pure: no service, no clock."""

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import ImproperlyConfigured, ValidationError

from scheduling.rows.quiet.hours import (
    DailyQuietHours,
    as_wall_time,
    held_reason,
    in_own_zone,
    released_at,
    validate_quiet_hours,
)
from scheduling.time.calendars.parsing import own_components
from scheduling.time.calendars.rules import CalendarRules

PARIS = ZoneInfo("Europe/Paris")
NIGHTS = DailyQuietHours(start=time(22), end=time(7), tz="Europe/Paris")


def paris(*args, fold=0):
    return datetime(*args, tzinfo=PARIS, fold=fold)


def utc(*args):
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    "at",
    [paris(2026, 6, 12, 22, 0), paris(2026, 6, 12, 23, 59), paris(2026, 6, 13, 0, 0)],
)
def test_a_night_span_crosses_midnight(at):
    assert NIGHTS.excluded_span(at) == (paris(2026, 6, 12, 22), paris(2026, 6, 13, 7))


def test_the_early_morning_belongs_to_the_span_that_began_the_evening_before():
    at = paris(2026, 6, 13, 6, 59, 59)
    assert NIGHTS.excluded_span(at) == (paris(2026, 6, 12, 22), paris(2026, 6, 13, 7))


@pytest.mark.parametrize(
    "at", [paris(2026, 6, 13, 7, 0), paris(2026, 6, 13, 12, 0), paris(2026, 6, 13, 21, 59, 59)]
)
def test_the_day_is_not_quiet(at):
    assert NIGHTS.excluded_span(at) is None
    assert released_at(NIGHTS, at) is None


def test_the_answer_is_the_same_for_any_offset_of_the_same_instant():
    at = paris(2026, 6, 12, 23, 30)
    assert NIGHTS.excluded_span(at.astimezone(UTC)) == NIGHTS.excluded_span(at)
    assert released_at(NIGHTS, at.astimezone(UTC)).astimezone(UTC) == utc(2026, 6, 13, 5, 0)


def test_the_spring_night_is_an_hour_shorter():
    # 22:00 CET is 21:00 UTC; 07:00 CEST is 05:00 UTC: eight hours, not nine.
    at = utc(2026, 3, 29, 1, 30)  # 03:30 CEST, just after the jump
    start, end = NIGHTS.excluded_span(at)
    assert (start, end) == (utc(2026, 3, 28, 21, 0), utc(2026, 3, 29, 5, 0))
    assert end.astimezone(UTC) - start.astimezone(UTC) == timedelta(hours=8)


def test_the_autumn_night_is_an_hour_longer_and_holds_both_passes_of_the_repeated_hour():
    first_pass, second_pass = paris(2026, 10, 25, 2, 30), paris(2026, 10, 25, 2, 30, fold=1)
    assert second_pass.astimezone(UTC) - first_pass.astimezone(UTC) == timedelta(hours=1)
    for at in (first_pass, second_pass):
        start, end = NIGHTS.excluded_span(at)
        assert (start, end) == (utc(2026, 10, 24, 20, 0), utc(2026, 10, 25, 6, 0))
        assert end.astimezone(UTC) - start.astimezone(UTC) == timedelta(hours=10)


def test_a_span_starting_at_a_skipped_time_starts_at_the_jump():
    early = DailyQuietHours(start=time(2, 30), end=time(6), tz="Europe/Paris")
    # 02:30 does not exist on 29 March: the clocks read 03:00 CEST (01:00 UTC) at the jump.
    assert early.excluded_span(utc(2026, 3, 29, 0, 59)) is None
    assert early.excluded_span(utc(2026, 3, 29, 1, 0)) == (
        utc(2026, 3, 29, 1, 0),
        utc(2026, 3, 29, 4, 0),
    )


def test_a_span_ending_at_a_repeated_time_ends_at_its_second_pass():
    early = DailyQuietHours(start=time(1), end=time(2, 30), tz="Europe/Paris")
    # 02:30 happens twice: 00:30 UTC (CEST) then 01:30 UTC (CET). Every instant whose wall
    # time is before 02:30 is quiet, so the night ends at the second pass, not an hour early.
    released = released_at(early, utc(2026, 10, 24, 23, 30))
    assert released.astimezone(UTC) == utc(2026, 10, 25, 1, 30)
    assert in_own_zone(early, released).utcoffset() == timedelta(hours=1)  # CET, the second
    assert early.excluded_span(utc(2026, 10, 25, 1, 0)) == (
        utc(2026, 10, 24, 23, 0),
        utc(2026, 10, 25, 1, 30),
    )
    assert early.excluded_span(utc(2026, 10, 25, 1, 30)) is None


def test_quiet_hours_and_a_calendar_window_are_one_rule():
    window = CalendarRules(own_components(PARIS, [], [], ["22:00-07:00"], []))
    spring, autumn = utc(2026, 3, 29, 1, 30), utc(2026, 10, 25, 1, 30)
    for at in (spring, autumn, utc(2026, 6, 12, 23), utc(2026, 6, 12, 12)):
        assert NIGHTS.excluded_span(at) == window.excluded_span(at)


def test_a_daytime_span_does_not_cross_midnight():
    lunch = DailyQuietHours(start=time(12), end=time(14), tz="UTC")
    assert lunch.excluded_span(utc(2026, 6, 12, 13)) == (utc(2026, 6, 12, 12), utc(2026, 6, 12, 14))
    assert lunch.excluded_span(utc(2026, 6, 12, 23)) is None


def test_chained_spans_release_at_the_end_of_the_last():
    class TwoNights:
        def excluded_span(self, at):
            for span in (
                (utc(2026, 1, 1, 22), utc(2026, 1, 2, 7)),
                (utc(2026, 1, 2, 7), utc(2026, 1, 2, 9)),
            ):
                if span[0] <= at < span[1]:
                    return span
            return None

    assert released_at(TwoNights(), utc(2026, 1, 1, 23)) == utc(2026, 1, 2, 9)


def test_the_reason_names_the_wall_time_and_zone():
    assert held_reason(paris(2026, 6, 13, 7)) == "held for quiet hours until 07:00 (Europe/Paris)"
    released = released_at(NIGHTS, utc(2026, 6, 12, 23))
    assert released == utc(2026, 6, 13, 5)
    assert released.tzinfo is UTC
    assert held_reason(in_own_zone(NIGHTS, released)).endswith("until 07:00 (Europe/Paris)")
    assert as_wall_time(utc(2026, 6, 13, 5)) == "2026-06-13T05:00:00+00:00"


def test_bad_quiet_hours_are_refused():
    with pytest.raises(ValidationError, match="Europe/Paris"):
        DailyQuietHours(tz="Mars/Olympus")
    with pytest.raises(ValueError, match="no span"):
        DailyQuietHours(start=time(7), end=time(7))


def model(**attributes):
    defaults = {"quiet_hours": NIGHTS, "quiet_policy": "deliver_at_end", "quiet_fold_by": ()}
    return type("Reminder", (), {**defaults, **attributes})


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({"quiet_hours": "22:00-07:00"}, "Reminder.quiet_hours = '22:00-07:00' is not valid"),
        ({"quiet_hours": ""}, "a stored calendar's name"),
        ({"quiet_hours": 7}, "Reminder.quiet_hours = 7 is not valid"),
        ({"quiet_policy": "later"}, "expected one of deliver_at_end, fold, skip"),
        ({"quiet_policy": "fold"}, "Reminder.quiet_fold_by is empty"),
    ],
)
def test_a_declaration_that_cannot_work_is_refused_naming_the_attribute(attributes, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        validate_quiet_hours(model(**attributes))


def test_no_quiet_hours_a_calendar_name_or_a_function_of_the_row_passes():
    validate_quiet_hours(model(quiet_hours=None, quiet_policy="nonsense"))
    validate_quiet_hours(model(quiet_hours="nights", quiet_policy="skip"))
    validate_quiet_hours(model(quiet_hours=lambda row: NIGHTS, quiet_policy="skip"))
