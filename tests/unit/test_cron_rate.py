"""How often a cron fires, counted from its fields: the save-time limits' arithmetic."""

from datetime import timedelta
from itertools import takewhile

import pytest

from scheduling.recurring.cron import (
    fire_times,
    fires_per_hour,
    longest_span_within,
    most_fires_within,
    parse,
)
from tests.conftest import CURRENT_TIME


@pytest.mark.parametrize(
    ("expression", "per_hour"),
    [
        ("* * * * * ?", 3600),
        ("*/30 * * * * ?", 120),
        ("* * * * *", 60),
        ("0 9 * * 1-5", 1),
        ("@every 7s", 515),
        ("@every 90m", 1),
        ("@at 2031-01-01T00:00:00Z", 1),
    ],
)
def test_fires_per_hour_is_read_from_the_fields(expression, per_hour):
    assert fires_per_hour(parse(expression)) == per_hour


@pytest.mark.parametrize(
    ("expression", "span"),
    [
        ("* * * * *", timedelta(days=1)),
        ("0 * * * *", timedelta(days=30)),
        ("*/15 9-17 * * *", timedelta(days=3)),
        ("0 0 1 * *", timedelta(days=366)),
        ("@every 90m", timedelta(days=2)),
        ("*/10 * * * * ?", timedelta(hours=2)),
    ],
)
def test_the_bound_holds_every_fire_time_of_a_span(expression, span):
    end = CURRENT_TIME + span
    times = fire_times(expression, CURRENT_TIME, "UTC", anchor=CURRENT_TIME)
    counted = sum(1 for _ in takewhile(lambda t: t <= end, times))
    assert counted <= most_fires_within(parse(expression), span)


def test_every_second_for_a_year_is_counted_without_listing_it():
    assert most_fires_within(parse("* * * * * ?"), timedelta(days=366)) == 31_622_460


def test_the_longest_span_within_a_limit_holds_at_most_that_many():
    plan = parse("* * * * * ?")
    span = longest_span_within(plan, 10_000, timedelta(days=366))
    assert span == timedelta(hours=2, minutes=45)
    assert (
        most_fires_within(plan, span)
        <= 10_000
        < most_fires_within(plan, span + timedelta(seconds=1))
    )
    assert longest_span_within(parse("0 3 * * *"), 10_000, timedelta(days=366)) == timedelta(
        days=366
    )
