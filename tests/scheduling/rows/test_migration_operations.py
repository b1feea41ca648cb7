import pytest
from django.db import connection

from scheduling.rows.migration_operations import AUTOVACUUM

pytestmark = pytest.mark.django_db


def storage_parameters(table: str) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [table])
        (options,) = cursor.fetchone()
    return dict(option.split("=", 1) for option in options or [])


def test_scheduled_tables_vacuum_and_analyze_after_a_small_share_of_changes():
    assert storage_parameters("scheduled_ping") == AUTOVACUUM
