"""The system check for a model declared partitioned whose table is not (yet)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core.checks import CheckMessage, Warning
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, router

from scheduling.rows.due_partitions import partitioning_of
from scheduling.rows.partitions.catalog import table_is_partitioned
from scheduling.rows.partitions.tables import connection_for
from scheduling.rows.registry import scheduled_models


def unpartitioned_warnings(databases: Sequence[str] | None) -> list[CheckMessage]:
    """Nothing unless the check may read the database, the table exists, and it is
    PostgreSQL; a database out of reach is skipped silently."""
    warnings: list[CheckMessage] = []
    for model in scheduled_models():
        try:
            declared = partitioning_of(model)
        except ImproperlyConfigured:  # reported by scheduling.E001
            continue
        if declared is None or router.db_for_read(model) not in (databases or ()):
            continue
        if unpartitioned(model):
            warnings.append(warning(model))
    return warnings


def unpartitioned(model: Any) -> bool:
    conn, table = connection_for(model), model._meta.db_table
    try:
        if conn.vendor != "postgresql":
            return False
        return table in conn.introspection.table_names() and not table_is_partitioned(conn, table)
    except DatabaseError:
        return False


def warning(model: Any) -> Warning:
    label = model._meta.label
    return Warning(
        f"{label} is declared partitioned on due_at (partitioning or SCHEDULING_PARTITIONS), "
        "but its table is a plain one: it is not partitioned, nor its old rows dropped whole.",
        hint=f"Run: manage.py scheduling_partitions convert {label} (online; "
        "docs/partitioning.md), or add PartitionByDueTime to its migrations.",
        obj=model,
        id="scheduling.W005",
    )
