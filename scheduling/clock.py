"""The database's clock: what "now" means for due times, read where the rows are written."""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import DEFAULT_DB_ALIAS

from scheduling.queries import database_clock


def database_now(using: str = DEFAULT_DB_ALIAS) -> datetime:
    value = database_clock(using)
    if isinstance(value, str):  # SQLite, in the embedded mode: UTC text
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    return value
