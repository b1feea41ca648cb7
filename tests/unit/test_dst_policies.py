"""The DST policies of a cron expression, pure: each fires as docs/cron.md shows on
2026-03-08 and 2026-11-01 in America/New_York and 2026-03-29 and 2026-10-25 in Europe/Paris."""

from datetime import UTC, datetime, timedelta

import pytest

from scheduling.recurring import cron
from scheduling.recurring.cron import next_transitions, time_zone


def utc(month: int, day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


def fires(
    expression: str,
    tz: str,
    start: datetime,
    end: datetime,
    dst_gap: str = "shift",
    dst_repeat: str = "auto",
) -> list[datetime]:
    times: list[datetime] = []
    for fire in cron.fire_times(expression, start, tz, dst_gap=dst_gap, dst_repeat=dst_repeat):
        if fire > end:
            return times
        times.append(fire)
    return times


NEW_YORK = "America/New_York"
PARIS = "Europe/Paris"


@pytest.mark.parametrize(
    ("gap", "expected"),
    [
        ("shift", [utc(3, 7, 7, 30), utc(3, 8, 7, 0), utc(3, 9, 6, 30)]),  # 03:00 EDT on the 8th
        ("skip", [utc(3, 7, 7, 30), utc(3, 9, 6, 30)]),  # no fire on the 8th
    ],
)
def test_the_spring_gap_in_new_york_fires_at_the_jump_or_not_at_all(gap, expected):
    assert fires("30 2 * * *", NEW_YORK, utc(3, 7, 0), utc(3, 10, 0), dst_gap=gap) == expected


@pytest.mark.parametrize(
    ("gap", "expected"),
    [
        # 01:40 CET, then 02:00, 02:20, 02:40 collapse into 03:00 CEST, then 03:20 CEST
        ("shift", [utc(3, 29, 0, 40), utc(3, 29, 1, 0), utc(3, 29, 1, 20)]),
        # 02:00-02:40 do not exist and do not fire; 03:00 CEST is a real wall time
        ("skip", [utc(3, 29, 0, 40), utc(3, 29, 1, 0), utc(3, 29, 1, 20)]),
    ],
)
def test_the_spring_gap_in_paris_for_an_interval_expression(gap, expected):
    start, end = utc(3, 29, 0, 30), utc(3, 29, 1, 20)
    assert fires("*/20 * * * *", PARIS, start, end, dst_gap=gap) == expected


def test_a_skipped_gap_in_paris_leaves_a_fixed_time_out_for_the_day():
    start, end = utc(3, 28, 0), utc(3, 31, 0)
    shifted = fires("30 2 * * *", PARIS, start, end)
    skipped = fires("30 2 * * *", PARIS, start, end, dst_gap="skip")

    assert shifted == [utc(3, 28, 1, 30), utc(3, 29, 1, 0), utc(3, 30, 0, 30)]
    assert skipped == [utc(3, 28, 1, 30), utc(3, 30, 0, 30)]


@pytest.mark.parametrize(
    ("expression", "repeat", "expected"),
    [
        # 01:30 EDT is 05:30Z, 01:30 EST is 06:30Z
        ("30 1 * * *", "auto", [utc(11, 1, 5, 30)]),
        ("30 1 * * *", "once", [utc(11, 1, 5, 30)]),
        ("30 1 * * *", "twice", [utc(11, 1, 5, 30), utc(11, 1, 6, 30)]),
        ("0 * * * *", "auto", [utc(11, 1, 5), utc(11, 1, 6), utc(11, 1, 7)]),
        ("0 * * * *", "once", [utc(11, 1, 5), utc(11, 1, 7)]),
        ("0 * * * *", "twice", [utc(11, 1, 5), utc(11, 1, 6), utc(11, 1, 7)]),
    ],
)
def test_the_repeated_hour_in_new_york_fires_once_or_twice_by_policy(expression, repeat, expected):
    start, end = utc(11, 1, 4, 59), utc(11, 1, 7, 0)
    assert fires(expression, NEW_YORK, start, end, dst_repeat=repeat) == expected


@pytest.mark.parametrize(
    ("repeat", "expected"),
    [
        ("auto", [utc(10, 25, 0, 30)]),  # 02:30 CEST only
        ("twice", [utc(10, 25, 0, 30), utc(10, 25, 1, 30)]),  # and 02:30 CET
    ],
)
def test_the_repeated_hour_in_paris(repeat, expected):
    start, end = utc(10, 24, 23, 0), utc(10, 25, 3, 0)
    assert fires("30 2 * * *", PARIS, start, end, dst_repeat=repeat) == expected


def test_once_asked_from_the_second_pass_waits_for_the_next_hour():
    inside_second_pass = utc(11, 1, 6, 10)  # 01:10 EST

    assert cron.next_fire("*/30 * * * *", inside_second_pass, NEW_YORK) == utc(11, 1, 6, 30)
    once = cron.next_fire("*/30 * * * *", inside_second_pass, NEW_YORK, dst_repeat="once")
    assert once == utc(11, 1, 7, 0)  # 02:00 EST


def test_elapsed_time_expressions_ignore_the_policies():
    anchor = utc(3, 8, 6, 0)
    every = cron.next_fire("@every 90m", anchor, NEW_YORK, anchor=anchor, dst_gap="skip")

    assert every == anchor + timedelta(minutes=90)


def test_the_next_transitions_of_a_zone():
    [spring, autumn] = next_transitions(time_zone(NEW_YORK), utc(1, 1, 0), 2)

    assert (spring.at, spring.forward) == (utc(3, 8, 7), True)
    assert (autumn.at, autumn.forward) == (utc(11, 1, 6), False)
    assert autumn.offset_before - autumn.offset_after == timedelta(hours=1)
    assert next_transitions(time_zone("UTC"), utc(1, 1, 0), 2) == []
