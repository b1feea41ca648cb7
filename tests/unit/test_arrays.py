"""The sweep's array literals (scheduling.rows.arrays): what PostgreSQL reads back is what was
given, and what cannot go as a literal goes as a list."""

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from scheduling.rows import arrays


def test_numbers_booleans_and_times_are_literals_postgresql_reads():
    at = datetime(2026, 11, 29, 12, 0, 0, 123456, tzinfo=UTC)
    paris = at.astimezone(timezone(timedelta(hours=1)))

    assert arrays.numbers([1, 22, 333]) == "{1,22,333}"
    assert arrays.booleans([True, False]) == "{t,f}"
    assert arrays.times([at, None, paris]) == (
        "{2026-11-29T12:00:00.123456+00:00,NULL,2026-11-29T13:00:00.123456+01:00}"
    )
    assert arrays.numbers([]) == "{}"


def test_a_naive_time_is_refused_naming_it():
    with pytest.raises(ValueError, match="naive datetime"):
        arrays.times([datetime(2026, 11, 29)])


def test_keys_are_a_literal_for_integers_and_uuids_and_a_list_for_anything_else():
    key = uuid.UUID(int=7)

    assert arrays.keys([1, 2]) == "{1,2}"
    assert arrays.keys([key]) == f"{{{key}}}"
    assert arrays.keys(["a,b", 'c"d']) == ["a,b", 'c"d']
    assert arrays.keys([True]) == [True]
