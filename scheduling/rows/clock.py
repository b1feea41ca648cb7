"""The database's clock: what "now" means for due times, read where the rows are written."""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import DEFAULT_DB_ALIAS, connections

from scheduling.rows.databases import on_postgresql

DATABASE_CLOCK = "SELECT statement_timestamp()"
PORTABLE_CLOCK = "SELECT CURRENT_TIMESTAMP"


def database_clock(using: str = DEFAULT_DB_ALIAS) -> datetime | str:
    """The database's clock; SQLite gives UTC text."""
    with connections[using].cursor() as cursor:
        cursor.execute(DATABASE_CLOCK if on_postgresql(using) else PORTABLE_CLOCK)
        value: datetime | str = cursor.fetchone()[0]
    return value


def database_now(using: str = DEFAULT_DB_ALIAS) -> datetime:
    value = database_clock(using)
    if isinstance(value, str):  # SQLite, in the embedded mode: UTC text
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    return value
