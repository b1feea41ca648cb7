"""Cron vectors: each grammar feature, calendars, DST gaps and overlaps, anchoring, errors."""

from datetime import UTC, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

import pytest

from scheduling.recurring.cron import CronError, fire_times, next_fire, to_utc, validate

JAN_1 = datetime(2026, 1, 1, tzinfo=UTC)


def fires(expression, after=JAN_1, tz="UTC", count=4, **kwargs):
    """The next fire times as ISO strings in the schedule's zone."""
    zone = ZoneInfo(tz)
    times = islice(fire_times(expression, after, tz, **kwargs), count)
    return [time.astimezone(zone).isoformat() for time in times]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # standard 5 fields, names, ranges, steps, lists
        ("5 * * * *", ["2026-01-01T00:05:00+00:00", "2026-01-01T01:05:00+00:00"]),
        ("0 3 * * MON-FRI", ["2026-01-01T03:00:00+00:00", "2026-01-02T03:00:00+00:00"]),
        ("*/20 9-10 * JAN *", ["2026-01-01T09:00:00+00:00", "2026-01-01T09:20:00+00:00"]),
        ("0 0 1,15 * *", ["2026-01-15T00:00:00+00:00", "2026-02-01T00:00:00+00:00"]),
        ("0 12 * * 7", ["2026-01-04T12:00:00+00:00", "2026-01-11T12:00:00+00:00"]),
        # day-of-month OR day-of-week when both are set (Vixie cron)
        ("0 0 13 * FRI", ["2026-01-02T00:00:00+00:00", "2026-01-09T00:00:00+00:00"]),
        # macros
        ("@hourly", ["2026-01-01T01:00:00+00:00", "2026-01-01T02:00:00+00:00"]),
        ("@daily", ["2026-01-02T00:00:00+00:00", "2026-01-03T00:00:00+00:00"]),
        ("@weekly", ["2026-01-04T00:00:00+00:00", "2026-01-11T00:00:00+00:00"]),
        ("@monthly", ["2026-02-01T00:00:00+00:00", "2026-03-01T00:00:00+00:00"]),
        ("@yearly", ["2027-01-01T00:00:00+00:00", "2028-01-01T00:00:00+00:00"]),
        ("@annually", ["2027-01-01T00:00:00+00:00", "2028-01-01T00:00:00+00:00"]),
        # Quartz: seconds first, ?, Quartz day numbers (1 = SUN)
        ("* * * * * ?", ["2026-01-01T00:00:01+00:00", "2026-01-01T00:00:02+00:00"]),
        ("*/15 * * * * ?", ["2026-01-01T00:00:15+00:00", "2026-01-01T00:00:30+00:00"]),
        ("30 0 9 ? * 2", ["2026-01-05T09:00:30+00:00", "2026-01-12T09:00:30+00:00"]),
        ("0 0 9 ? * 2-6", ["2026-01-01T09:00:00+00:00", "2026-01-02T09:00:00+00:00"]),
        ("0 0 9 10 * ?", ["2026-01-10T09:00:00+00:00", "2026-02-10T09:00:00+00:00"]),
        # L, LW, L-n, nW
        ("0 0 12 L * ?", ["2026-01-31T12:00:00+00:00", "2026-02-28T12:00:00+00:00"]),
        ("0 0 12 LW * ?", ["2026-01-30T12:00:00+00:00", "2026-02-27T12:00:00+00:00"]),
        ("0 0 12 L-2 * ?", ["2026-01-29T12:00:00+00:00", "2026-02-26T12:00:00+00:00"]),
        # 2026-02-15 is a Sunday: Monday the 16th; 2026-08-01 is a Saturday: Monday the 3rd
        ("0 0 12 15W * ?", ["2026-01-15T12:00:00+00:00", "2026-02-16T12:00:00+00:00"]),
        ("0 0 12 1W 8 ?", ["2026-08-03T12:00:00+00:00", "2027-08-02T12:00:00+00:00"]),
        # 2026-05-31 is a Sunday at the end of the month: Friday the 29th
        ("0 0 12 31W 5 ?", ["2026-05-29T12:00:00+00:00", "2027-05-31T12:00:00+00:00"]),
        # nL and n#k, numbers (Quartz) and names
        ("0 0 12 ? * 6L", ["2026-01-30T12:00:00+00:00", "2026-02-27T12:00:00+00:00"]),
        ("0 0 12 ? * FRIL", ["2026-01-30T12:00:00+00:00", "2026-02-27T12:00:00+00:00"]),
        ("0 0 12 ? * 6#3", ["2026-01-16T12:00:00+00:00", "2026-02-20T12:00:00+00:00"]),
        ("0 12 * * MON#1", ["2026-01-05T12:00:00+00:00", "2026-02-02T12:00:00+00:00"]),
        ("0 12 * * 5L", ["2026-01-30T12:00:00+00:00", "2026-02-27T12:00:00+00:00"]),
        # the year field
        ("0 0 12 1 1 ? 2028-2030", ["2028-01-01T12:00:00+00:00", "2029-01-01T12:00:00+00:00"]),
        ("0 0 0 1 1 ? 2030/5", ["2030-01-01T00:00:00+00:00", "2035-01-01T00:00:00+00:00"]),
        ("0 0 0 1 JAN ? 2027,2029", ["2027-01-01T00:00:00+00:00", "2029-01-01T00:00:00+00:00"]),
        ("0 0 0 1 1 ? *", ["2027-01-01T00:00:00+00:00", "2028-01-01T00:00:00+00:00"]),
    ],
)
def test_grammar(expression, expected):
    assert fires(expression, count=2) == expected


@pytest.mark.parametrize(
    ("expression", "after", "expected"),
    [
        # wrap-around ranges, in every field: the range runs past the field's end and on
        # from its start (2026-01-03 is a Saturday)
        ("0 0 10 ? * SAT-SUN", JAN_1, ["2026-01-03T10:00:00", "2026-01-04T10:00:00"]),
        ("0 10 * * SAT-SUN", JAN_1, ["2026-01-03T10:00:00", "2026-01-04T10:00:00"]),
        ("0 10 * * 6-0", JAN_1, ["2026-01-03T10:00:00", "2026-01-04T10:00:00"]),
        ("0 10 * * 7-1", JAN_1, ["2026-01-04T10:00:00", "2026-01-05T10:00:00"]),
        (
            "0 10 * * FRI-TUE",
            datetime(2026, 1, 7, tzinfo=UTC),
            [
                "2026-01-09T10:00:00",
                "2026-01-10T10:00:00",
                "2026-01-11T10:00:00",
                "2026-01-12T10:00:00",
                "2026-01-13T10:00:00",
                "2026-01-16T10:00:00",
            ],
        ),
        (
            "0 10 * * FRI-TUE/2",
            datetime(2026, 1, 7, tzinfo=UTC),
            [
                "2026-01-09T10:00:00",
                "2026-01-11T10:00:00",
                "2026-01-13T10:00:00",
                "2026-01-16T10:00:00",
            ],
        ),
        (
            "0 22-2 * * *",
            JAN_1,
            [
                "2026-01-01T01:00:00",
                "2026-01-01T02:00:00",
                "2026-01-01T22:00:00",
                "2026-01-01T23:00:00",
                "2026-01-02T00:00:00",
            ],
        ),
        (
            "0 22-2/2 * * *",
            JAN_1,
            ["2026-01-01T02:00:00", "2026-01-01T22:00:00", "2026-01-02T00:00:00"],
        ),
        (
            "50-10/10 0 * * *",
            JAN_1,
            ["2026-01-01T00:10:00", "2026-01-01T00:50:00", "2026-01-02T00:00:00"],
        ),
        (
            "0 0 1 NOV-FEB *",
            JAN_1,
            [
                "2026-02-01T00:00:00",
                "2026-11-01T00:00:00",
                "2026-12-01T00:00:00",
                "2027-01-01T00:00:00",
            ],
        ),
        (
            "0 0 30-2 * *",
            JAN_1,
            [
                "2026-01-02T00:00:00",
                "2026-01-30T00:00:00",
                "2026-01-31T00:00:00",
                "2026-02-01T00:00:00",
                "2026-02-02T00:00:00",
                "2026-03-01T00:00:00",
            ],
        ),
        (
            "58-2 0 0 1 1 ?",
            JAN_1,
            [
                "2026-01-01T00:00:01",
                "2026-01-01T00:00:02",
                "2026-01-01T00:00:58",
                "2026-01-01T00:00:59",
            ],
        ),
        # L-nW: the weekday nearest to the n-th day before the last (2026-01-30 is a Friday,
        # 2026-02-27 a Friday, 2026-05-30 a Saturday, 2027-05-30 a Sunday)
        (
            "0 0 12 L-1W * ?",
            JAN_1,
            ["2026-01-30T12:00:00", "2026-02-27T12:00:00", "2026-03-30T12:00:00"],
        ),
        ("0 0 12 L-1W 5 ?", JAN_1, ["2026-05-29T12:00:00", "2027-05-31T12:00:00"]),
        (
            "0 0 12 L-3W * ?",
            JAN_1,
            ["2026-01-28T12:00:00", "2026-02-25T12:00:00", "2026-03-27T12:00:00"],
        ),
        # W inside a list, with plain days and L rules (2026-02-01 is a Sunday)
        (
            "0 0 12 2W,16 * ?",
            JAN_1,
            [
                "2026-01-02T12:00:00",
                "2026-01-16T12:00:00",
                "2026-02-02T12:00:00",
                "2026-02-16T12:00:00",
            ],
        ),
        (
            "0 0 12 L-1W,L-1 * ?",
            datetime(2026, 5, 1, tzinfo=UTC),
            ["2026-05-29T12:00:00", "2026-05-30T12:00:00", "2026-06-29T12:00:00"],
        ),
        (
            "0 12 1W,15W,L * *",
            datetime(2026, 1, 31, 13, tzinfo=UTC),
            ["2026-02-02T12:00:00", "2026-02-16T12:00:00", "2026-02-28T12:00:00"],
        ),
        # five fields, day-of-month rules ORed with a day-of-week (Vixie), or ANDed with *
        (
            "0 12 L * MON",
            datetime(2026, 1, 27, tzinfo=UTC),
            ["2026-01-31T12:00:00", "2026-02-02T12:00:00", "2026-02-09T12:00:00"],
        ),
        ("0 12 */10 * MON", JAN_1, ["2026-05-11T12:00:00", "2026-06-01T12:00:00"]),
    ],
)
def test_ranges_wrap_and_day_rules_combine(expression, after, expected):
    found = [
        time.replace(tzinfo=None).isoformat()
        for time in islice(fire_times(expression, after, "UTC"), len(expected))
    ]
    assert found == expected


def test_leap_days_fire_only_in_leap_years():
    assert fires("0 0 29 2 *", count=3) == [
        "2028-02-29T00:00:00+00:00",
        "2032-02-29T00:00:00+00:00",
        "2036-02-29T00:00:00+00:00",
    ]


def test_the_last_day_follows_month_lengths_and_leap_years():
    after = datetime(2027, 12, 31, tzinfo=UTC)
    assert fires("0 0 L * *", after=after, count=3) == [
        "2028-01-31T00:00:00+00:00",
        "2028-02-29T00:00:00+00:00",
        "2028-03-31T00:00:00+00:00",
    ]


def test_the_31st_skips_shorter_months():
    assert fires("0 0 31 * *", count=3) == [
        "2026-01-31T00:00:00+00:00",
        "2026-03-31T00:00:00+00:00",
        "2026-05-31T00:00:00+00:00",
    ]


def test_a_year_list_ends_the_schedule():
    assert fires("0 0 0 1 1 ? 2027", count=5) == ["2027-01-01T00:00:00+00:00"]
    assert next_fire("0 0 0 1 1 ? 2027", datetime(2027, 1, 1, tzinfo=UTC), "UTC") is None


def test_no_fire_time_beyond_what_a_datetime_holds():
    assert next_fire("* * * * *", datetime(9999, 12, 31, 23, 59, 30, tzinfo=UTC), "UTC") is None
    assert next_fire("0 0 12 29 2 ?", datetime(9998, 1, 1, tzinfo=UTC), "UTC") is None


def test_the_result_is_strictly_after_and_in_utc():
    at = datetime(2026, 1, 1, 3, 0, tzinfo=UTC)
    result = next_fire("0 3 * * *", at, "UTC")
    assert result == datetime(2026, 1, 2, 3, 0, tzinfo=UTC)
    assert result.tzinfo is UTC
    assert next_fire("0 3 * * *", at - timedelta(microseconds=1), "UTC") == at


def test_wall_times_follow_the_zone():
    assert fires("0 3 * * *", tz="Europe/Paris", count=2) == [
        "2026-01-01T03:00:00+01:00",
        "2026-01-02T03:00:00+01:00",
    ]
    assert next_fire("0 3 * * *", JAN_1, "Europe/Paris") == datetime(2026, 1, 1, 2, tzinfo=UTC)


# --- DST ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tz", "day", "expected"),
    [
        # 02:30 does not exist: the first instant after the jump, then 02:30 again
        (
            "Europe/Paris",
            datetime(2026, 3, 28, 12, tzinfo=UTC),
            ["2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"],
        ),
        (
            "America/New_York",
            datetime(2026, 3, 7, 12, tzinfo=UTC),
            ["2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"],
        ),
    ],
)
def test_a_wall_time_in_the_spring_gap_fires_at_the_first_instant_after_the_jump(tz, day, expected):
    assert fires("30 2 * * *", after=day, tz=tz, count=2) == expected


def test_times_inside_the_gap_collapse_into_one_fire_and_nothing_is_lost():
    # Every 20 minutes: 02:00, 02:20 and 02:40 do not exist in Paris on 2026-03-29.
    after = datetime(2026, 3, 29, 0, 30, tzinfo=UTC)  # 01:30 CET
    assert fires("*/20 * * * *", after=after, tz="Europe/Paris", count=4) == [
        "2026-03-29T01:40:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-29T03:20:00+02:00",
        "2026-03-29T03:40:00+02:00",
    ]


@pytest.mark.parametrize(
    ("tz", "day", "expression", "expected"),
    [
        # 02:30 happens twice in Paris on 2026-10-25: once, at the first (summer time)
        (
            "Europe/Paris",
            datetime(2026, 10, 24, 12, tzinfo=UTC),
            "30 2 * * *",
            ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"],
        ),
        # 01:30 happens twice in New York on 2026-11-01
        (
            "America/New_York",
            datetime(2026, 10, 31, 12, tzinfo=UTC),
            "30 1 * * *",
            ["2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"],
        ),
    ],
)
def test_a_wall_time_in_the_autumn_overlap_fires_once_at_its_first_occurrence(
    tz, day, expression, expected
):
    assert fires(expression, after=day, tz=tz, count=2) == expected


def test_asked_from_inside_the_second_pass_of_an_overlap_it_moves_forward():
    after = datetime(2026, 11, 1, 6, 10, tzinfo=UTC)  # 01:10 EST, the second 01:10
    assert fires("*/30 * * * *", after=after, tz="America/New_York", count=3) == [
        "2026-11-01T01:30:00-05:00",
        "2026-11-01T02:00:00-05:00",
        "2026-11-01T02:30:00-05:00",
    ]
    assert fires("30 1 * * *", after=after, tz="America/New_York", count=1) == [
        "2026-11-02T01:30:00-05:00"
    ]


# An interval-style expression (minute or hour field starting with *) fires on both passes of
# a repeated hour, by elapsed time; any other fires once, on the first pass.
LONDON_AUTUMN = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 01:30 BST, the first pass
NEW_YORK_AUTUMN = datetime(2026, 11, 1, 4, 30, tzinfo=UTC)  # 00:30 EDT


@pytest.mark.parametrize(
    ("expression", "tz", "after", "expected"),
    [
        (
            "*/15 * * * *",
            "Europe/London",
            LONDON_AUTUMN,
            [
                "2026-10-25T01:45:00+01:00",
                "2026-10-25T01:00:00+00:00",
                "2026-10-25T01:15:00+00:00",
                "2026-10-25T01:30:00+00:00",
                "2026-10-25T01:45:00+00:00",
                "2026-10-25T02:00:00+00:00",
            ],
        ),
        (
            "0 * * * *",
            "Europe/London",
            datetime(2026, 10, 24, 23, 30, tzinfo=UTC),
            [
                "2026-10-25T01:00:00+01:00",
                "2026-10-25T01:00:00+00:00",
                "2026-10-25T02:00:00+00:00",
            ],
        ),
        (
            "0 * * * *",
            "America/New_York",
            NEW_YORK_AUTUMN,
            [
                "2026-11-01T01:00:00-04:00",
                "2026-11-01T01:00:00-05:00",
                "2026-11-01T02:00:00-05:00",
            ],
        ),
        (
            "*/15 * * * *",
            "America/New_York",
            datetime(2026, 11, 1, 5, 40, tzinfo=UTC),  # 01:40 EDT
            [
                "2026-11-01T01:45:00-04:00",
                "2026-11-01T01:00:00-05:00",
                "2026-11-01T01:15:00-05:00",
            ],
        ),
        (
            "@hourly",
            "America/New_York",
            NEW_YORK_AUTUMN,
            [
                "2026-11-01T01:00:00-04:00",
                "2026-11-01T01:00:00-05:00",
                "2026-11-01T02:00:00-05:00",
            ],
        ),
        # * in the hour field: every minute of hour 1, on both passes
        (
            "59 * * * *",
            "America/New_York",
            NEW_YORK_AUTUMN,
            [
                "2026-11-01T00:59:00-04:00",
                "2026-11-01T01:59:00-04:00",
                "2026-11-01T01:59:00-05:00",
                "2026-11-01T02:59:00-05:00",
            ],
        ),
        # hours every 2: 00:00 EDT, then 02:00 EST, three hours later (hour 1 does not match)
        (
            "0 */2 * * *",
            "America/New_York",
            datetime(2026, 11, 1, 3, 30, tzinfo=UTC),
            ["2026-11-01T00:00:00-04:00", "2026-11-01T02:00:00-05:00"],
        ),
        # fixed times: once, on the first pass, whatever the field count
        (
            "30 1 * * *",
            "Europe/London",
            datetime(2026, 10, 24, 12, tzinfo=UTC),
            ["2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00+00:00"],
        ),
        (
            "0,30 1 * * *",
            "America/New_York",
            NEW_YORK_AUTUMN,
            [
                "2026-11-01T01:00:00-04:00",
                "2026-11-01T01:30:00-04:00",
                "2026-11-02T01:00:00-05:00",
            ],
        ),
        (
            "0 15,45 1 * * ?",
            "America/New_York",
            NEW_YORK_AUTUMN,
            [
                "2026-11-01T01:15:00-04:00",
                "2026-11-01T01:45:00-04:00",
                "2026-11-02T01:15:00-05:00",
            ],
        ),
        # a range does not start with *: fixed, as Vixie cron reads it
        (
            "0 0-23 * * *",
            "America/New_York",
            NEW_YORK_AUTUMN,
            [
                "2026-11-01T01:00:00-04:00",
                "2026-11-01T02:00:00-05:00",
            ],
        ),
    ],
)
def test_the_repeated_autumn_hour(expression, tz, after, expected):
    assert fires(expression, after=after, tz=tz, count=len(expected)) == expected


@pytest.mark.parametrize(
    ("expression", "tz", "after", "expected"),
    [
        # the spring gap is unchanged: wall times the clocks skip fire once, at the jump
        (
            "*/15 * * * *",
            "Europe/London",
            datetime(2026, 3, 29, 0, 40, tzinfo=UTC),  # 00:40 GMT
            [
                "2026-03-29T00:45:00+00:00",
                "2026-03-29T02:00:00+01:00",
                "2026-03-29T02:15:00+01:00",
            ],
        ),
        (
            "30 * * * *",
            "America/New_York",
            datetime(2026, 3, 8, 6, 0, tzinfo=UTC),  # 01:00 EST
            [
                "2026-03-08T01:30:00-05:00",
                "2026-03-08T03:00:00-04:00",
                "2026-03-08T03:30:00-04:00",
            ],
        ),
        (
            "30 2 * * *",
            "America/New_York",
            datetime(2026, 3, 7, 12, tzinfo=UTC),
            ["2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"],
        ),
    ],
)
def test_the_spring_gap_policy_is_unchanged(expression, tz, after, expected):
    assert fires(expression, after=after, tz=tz, count=len(expected)) == expected


def test_every_fire_of_a_day_across_the_overlap_is_an_increasing_instant():
    after = datetime(2026, 10, 31, 22, tzinfo=UTC)
    for expression in ("*/7 * * * *", "0 * * * *", "* 1 * * *", "15 1 * * *", "*/20 * * * * ?"):
        times = list(islice(fire_times(expression, after, "Europe/London"), 400))
        assert times == sorted(set(times)), expression


def test_to_utc_applies_the_policy_to_single_wall_times():
    paris = ZoneInfo("Europe/Paris")
    assert to_utc(datetime(2026, 3, 29, 2, 30), paris) == datetime(2026, 3, 29, 1, tzinfo=UTC)
    assert to_utc(datetime(2026, 10, 25, 2, 30), paris) == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)


# --- @every and @at ------------------------------------------------------------------------


def test_every_is_anchored_at_the_start():
    anchor = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
    assert fires("@every 90m", anchor=anchor, count=3) == [
        "2026-01-01T00:10:00+00:00",
        "2026-01-01T01:40:00+00:00",
        "2026-01-01T03:10:00+00:00",
    ]
    later = datetime(2026, 1, 1, 1, 40, tzinfo=UTC)
    assert next_fire("@every 1h30m", later, "UTC", anchor=anchor) == later + timedelta(hours=1.5)


def test_every_counts_elapsed_time_across_dst():
    anchor = datetime(2026, 3, 28, 12, tzinfo=UTC)  # 13:00 in Paris
    assert fires("@every 24h", after=anchor, tz="Europe/Paris", anchor=anchor, count=2) == [
        "2026-03-29T14:00:00+02:00",
        "2026-03-30T14:00:00+02:00",
    ]


@pytest.mark.parametrize(
    ("duration", "seconds"),
    [("90m", 5400), ("1h30m", 5400), ("24h", 86400), ("45s", 45), ("2d", 172800)],
)
def test_every_durations(duration, seconds):
    assert next_fire(f"@every {duration}", JAN_1, "UTC", anchor=JAN_1) == JAN_1 + timedelta(
        seconds=seconds
    )


def test_at_fires_once():
    assert fires("@at 2026-12-24T09:00:00Z", count=3) == ["2026-12-24T09:00:00+00:00"]
    assert next_fire("@at 2025-12-24T09:00:00Z", JAN_1, "UTC") is None


def test_at_without_an_offset_is_a_wall_time_in_the_schedule_zone():
    assert fires("@at 2026-12-24T09:00", tz="Europe/Paris") == ["2026-12-24T09:00:00+01:00"]


def test_at_takes_epoch_seconds():
    after = datetime(2022, 1, 1, tzinfo=UTC)
    assert fires("@at 1647067401", after=after) == ["2022-03-12T06:43:21+00:00"]
    assert fires("@at 1798102800", tz="Europe/Paris") == ["2026-12-24T10:00:00+01:00"]


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("", "cron is empty"),
        ("* * *", "cron has 3 fields; expected 5"),
        ("61 * * * *", 'minute field "61" is not valid; expected 0-59 (61 is not in 0-59)'),
        ("* 24 * * *", 'hour field "24" is not valid; expected 0-23'),
        ("* * 32 * *", 'day-of-month field "32" is not valid'),
        ("* * * 13 *", 'month field "13" is not valid; expected 1-12 or JAN-DEC'),
        ("* * * * FUNDAY", 'day-of-week field "FUNDAY" is not valid'),
        ("60 * * * * ?", 'second field "60" is not valid; expected 0-59'),
        ("0 0 12 * * 0", "expected 1-7 (1 = SUN, as Quartz numbers them) or SUN-SAT"),
        ("0 0 12 10 * MON", "sets one of them and puts ? in the other"),
        ("0 0 12 15W * MON", "sets one of them and puts ? in the other"),
        ("0 0 12 ? * ? 1969", 'year field "1969" is not valid; expected 1970-2099'),
        ("0 0 0 1 1 ? 2030-2027", "a year range runs upward"),
        ("0 0 12 ? * ? 20x0", 'year field "20X0" is not valid'),
        ("0 0 ? * * *", "? stands alone, and only in day-of-month or day-of-week"),
        ("0 0 12 ? * 2#6", 'day-of-week field "2#6" is not valid; expected'),
        ("0 0 12 ? * 2#6", "n#k (k 1-5)"),
        ("0 43 9 ? * SAT,SUN,L", "L stands alone (Saturday) or follows a day"),
        ("0 0 12 1-5W * ?", "L and W stand alone or as L-n, LW, L-nW or nW"),
        ("0 0 12 32W * ?", "32: nW takes a day from 1 to 31"),
        ("0 0 12 L-31 * ?", "31: L-n takes n from 0 to 30"),
        (
            "*/60 * * * *",
            'minute field "*/60" is not valid; expected 0-59 (a step runs from 1 to 59)',
        ),
        ("0 0 30 2 *", 'month field "2" has no month with that day'),
        ("@fortnightly", "cron macro '@fortnightly' is not known"),
        ("@every 0s", "must be from one second to 3660d"),
        ("@every 99999999999d", "must be from one second to 3660d"),
        ("@every 5 minutes", "@every duration '5 minutes' is not valid"),
        ("@at tomorrow", "@at instant 'tomorrow' is not valid; expected ISO 8601"),
        ("@at -5", "or epoch seconds"),
        ("@at 4102444800", "years run 1970-2099"),
        ("@at 2150-01-01T00:00:00Z", "years run 1970-2099"),
    ],
)
def test_invalid_expressions_are_refused_naming_the_field_and_why(expression, message):
    with pytest.raises(CronError) as error:
        validate(expression, "UTC")
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("expression", "field"),
    [
        ("\u00b9 * * * *", 'minute field "\u00b9"'),  # superscript one
        ("0 \u0663 * * *", 'hour field "\u0663"'),  # Arabic-Indic three
        ("0 0 \u0661\u0665 * *", 'day-of-month field "\u0661\u0665"'),
        ("0 0 12 ? * \u00b2", 'day-of-week field "\u00b2"'),
        (
            "0 0 0 1 1 ? \uff12\uff10\uff13\uff10",
            'year field "\uff12\uff10\uff13\uff10"',
        ),  # fullwidth
        ("@every \u0665m", '@every value "\u0665m"'),
        ("@at \u0661\u0666\u0664\u0667", '@at value "\u0661\u0666\u0664\u0667"'),
        ("0 0 * * M\u041eN", 'day-of-week field "M\u041eN"'),  # a Cyrillic O
    ],
)
def test_non_ascii_digits_and_letters_are_refused_naming_the_field(expression, field):
    with pytest.raises(CronError) as error:
        validate(expression, "UTC")
    assert f"{field} is not valid" in str(error.value)
    assert "is not ASCII; write digits as 0-9" in str(error.value)


@pytest.mark.parametrize("tz", ["Mars/Olympus", "", "Europe/paris", "+02:00"])
def test_unknown_time_zones_are_refused(tz):
    with pytest.raises(CronError, match="is not a known IANA time zone name"):
        validate("* * * * *", tz)
