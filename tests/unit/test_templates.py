"""Payload templates: variables from the fire time in the schedule's zone; bad ones refused."""

from datetime import UTC, datetime

import pytest

from scheduling.recurring.templates import TemplateError, render, validate_template

# 14:34:56 in Paris on the day clocks go forward (midnight was still winter time).
FIRE = datetime(2026, 3, 29, 12, 34, 56, tzinfo=UTC)


def rendered(template, fire=FIRE, tz="Europe/Paris"):
    return render(template, fire_time=fire, tz=tz, schedule_name="nightly-export")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("processTime", "2026-03-29T14:34:56.000+02:00"),
        ("startOfHour", "2026-03-29T14:00:00.000+02:00"),
        ("startOfDay", "2026-03-29T00:00:00.000+01:00"),
        ("startOfPreviousDay", "2026-03-28T00:00:00.000+01:00"),
        ("endOfPreviousDay", "2026-03-28T23:59:59.999+01:00"),
        ("startOfDayOneWeekAgo", "2026-03-22T00:00:00.000+01:00"),
        ("todaysDate", "2026-03-29"),
        ("yesterdaysDate", "2026-03-28"),
        ("scheduleName", "nightly-export"),
    ],
)
def test_each_variable_comes_from_the_fire_time_in_the_schedule_zone(variable, value):
    assert rendered({"v": f"${{{variable}}}"}) == {"v": value}


def test_dates_are_the_schedule_zone_dates_not_utc():
    late_evening = datetime(2026, 11, 22, 23, 30, tzinfo=UTC)  # already the 23rd in Paris

    assert rendered("${todaysDate}", fire=late_evening) == "2026-11-23"
    assert rendered("${todaysDate}", fire=late_evening, tz="UTC") == "2026-11-22"


def test_a_day_without_a_midnight_starts_at_the_first_instant_after_the_jump():
    fire = datetime(2026, 9, 6, 15, tzinfo=UTC)  # Santiago skips 00:00-01:00 that day

    assert rendered("${startOfDay}", fire=fire, tz="America/Santiago") == (
        "2026-09-06T01:00:00.000-03:00"
    )


def test_variables_are_filled_in_anywhere_in_nested_json_and_other_values_are_kept():
    template = {
        "file": "export-${yesterdaysDate}.csv",
        "range": ["${startOfPreviousDay}", "${endOfPreviousDay}"],
        "options": {"limit": 10, "dry": False, "note": None},
        "literal": "$${todaysDate} and $5",
    }

    assert rendered(template) == {
        "file": "export-2026-03-28.csv",
        "range": ["2026-03-28T00:00:00.000+01:00", "2026-03-28T23:59:59.999+01:00"],
        "options": {"limit": 10, "dry": False, "note": None},
        "literal": "${todaysDate} and $5",
    }


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ({"a": "${tomorrow}"}, "unknown variable ${tomorrow} at $.a; known variables:"),
        ({"a": [1, {"b": "${processtime}"}]}, "unknown variable ${processtime} at $.a[1].b"),
        ({"a": "${todaysDate"}, "unterminated ${ at $.a"),
        ("${}", "unknown variable ${} at $"),
    ],
)
def test_bad_templates_are_refused_saying_where(template, message):
    with pytest.raises(TemplateError) as error:
        validate_template(template)
    assert message in str(error.value)


def test_good_templates_pass_validation():
    validate_template({"a": "${processTime}", "b": ["$${x}", 1, None], "c": "cost: $5"})
