"""PartitionByDueTime: the migration operation that partitions a scheduled table on due_at.

Right after CreateModel (an empty table) or later, on a table with rows: the same conversion
as `manage.py scheduling_partitions convert` (scheduling.rows.partitions.convert). In an atomic
migration the unique index is built in the migration's transaction; a migration with
`atomic = False` builds it CONCURRENTLY, for a table already holding many rows.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.migrations.operations.base import Operation

from scheduling.rows.due_partitions import DuePartitions, as_interval
from scheduling.rows.partitions.convert import Target, convert_table
from scheduling.rows.partitions.maintain import maintain_table
from scheduling.rows.partitions.tables import clock


class PartitionByDueTime(Operation):
    """`PartitionByDueTime("ScheduledPingPartitioned", interval="1d")` (or a timedelta)."""

    reduces_to_sql = False
    reversible = False

    def __init__(
        self, model_name: str, interval: timedelta | str = "1d", premake: int = 14
    ) -> None:
        self.model_name = model_name
        self.interval = interval
        self.premake = premake

    def state_forwards(self, app_label: str, state: Any) -> None:
        pass  # Django's model state has no notion of partitions

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        conn = schema_editor.connection
        if conn.vendor != "postgresql":
            return  # the embedded mode (SQLite): one plain table
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(conn.alias, model):
            return  # the routers keep this model's table on another database
        spec = DuePartitions(interval=as_interval(self.interval), premake=self.premake)
        target = Target(conn, model._meta.db_table, model._meta.pk.column, spec)
        now = clock(conn)
        if convert_table(target, concurrently=not conn.in_atomic_block, now=now).bound:
            maintain_table(conn, model._meta.db_table, spec, now)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        raise NotImplementedError("PartitionByDueTime cannot be reversed")

    def describe(self) -> str:
        return f"Partition {self.model_name} on due_at by {self.interval}"

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        kwargs = {"interval": self.interval, "premake": self.premake}
        return (self.__class__.__qualname__, [self.model_name], kwargs)


# Django writes an operation's module into migrations: the public one, which stays for good.
PartitionByDueTime.__module__ = "scheduling.partitions"
