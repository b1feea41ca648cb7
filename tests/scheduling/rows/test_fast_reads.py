"""The sweep's fast reads give the values Django's own reading gives: timestamps through
psycopg's C loader (scheduling.rows.timestamps), a plain JSONField's columns through orjson
(scheduling.rows.instances.faster)."""

from datetime import UTC

import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import register_tzloader  # type: ignore[import-untyped]

from scheduling.recurring.models import RecurringSchedule
from scheduling.rows.instances import fetch_by_pk
from scheduling.rows.timestamps import c_loader

pytestmark = pytest.mark.django_db

TIMES = """
    SELECT timestamptz '2026-03-29 01:30:00.123456+05:30', timestamptz '0001-01-01 00:00:00+00',
           timestamptz '9999-12-31 23:59:59.999999+00', timestamptz '1969-12-31 23:59:59.5+00',
           timestamptz '2026-10-25 01:30:00 Europe/Paris', NULL::timestamptz
"""


def test_connections_read_timestamps_with_the_c_loader_and_djangos_values():
    assert c_loader() is not None  # psycopg-binary is a dependency
    with connection.cursor() as cursor:
        loader = cursor.cursor.adapters.get_loader(1184, 0)
        assert loader.__name__ == "CTimestampLoader"
        assert loader.timezone == connection.timezone  # no loader of its own for each cursor
        cursor.execute(TIMES)
        fast = cursor.fetchone()
        register_tzloader(connection.timezone, cursor.cursor)  # Django's own
        cursor.execute(TIMES)
        djangos = cursor.fetchone()

    assert fast == djangos
    assert [value.tzinfo for value in fast[:-1]] == [UTC] * 5
    assert [value.tzinfo for value in djangos[:-1]] == [UTC] * 5


def test_a_plain_json_column_read_in_bulk_is_what_the_orm_reads():
    templates = [
        '{"day": "${todaysDate}", "n": 1.5, "deep": [{"a": null, "b": true}], "é": "ünï"}',
        '{"huge": 1180591620717411303424, "small": -9223372036854775808}',  # orjson refuses
        "[]",
        '"text"',
    ]
    ids = set()
    for number, template in enumerate(templates):
        schedule = RecurringSchedule.objects.create(
            name=f"json-{number}", cron="0 3 * * *", queue="reports"
        )
        # Past the API's checks (a 70-bit integer): a row written by SQL.
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE recurring_schedule SET payload_template = %s::jsonb WHERE id = %s",
                [template, schedule.pk],
            )
        ids.add(schedule.pk)

    fast = {row.pk: row.payload_template for row in fetch_by_pk(RecurringSchedule, ids, "default")}
    orm = dict(RecurringSchedule.objects.filter(pk__in=ids).values_list("pk", "payload_template"))

    assert fast == orm
    assert {"huge": 2**70, "small": -(2**63)} in fast.values()
