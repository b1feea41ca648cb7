"""Migration operations for scheduled tables."""

from typing import Any

from django.db.migrations.operations.base import Operation

# A scheduled table churns like a queue: every delivery turns a pending row into a dead tuple
# in its partial index, and a large drain leaves statistics that still count delivered rows
# as pending. PostgreSQL's defaults wait for 20% of the table to change before vacuuming
# (2M rows of a 10M table); these settings vacuum and analyze after about 1%.
AUTOVACUUM = {
    "autovacuum_vacuum_scale_factor": "0.01",
    "autovacuum_vacuum_threshold": "1000",
    "autovacuum_vacuum_insert_scale_factor": "0.01",
    "autovacuum_analyze_scale_factor": "0.005",
    "autovacuum_analyze_threshold": "1000",
    "autovacuum_vacuum_cost_limit": "2000",
}


class TuneScheduledTable(Operation):
    """`TuneScheduledTable("scheduled_purchase")`: the autovacuum settings above (PostgreSQL)."""

    reduces_to_sql = True
    reversible = True

    def __init__(self, table: str) -> None:
        self.table = table

    def state_forwards(self, app_label: str, state: Any) -> None:
        pass  # storage parameters are not part of Django's model state

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        settings = ", ".join(f"{name} = {value}" for name, value in AUTOVACUUM.items())
        self._alter(schema_editor, f"SET ({settings})")

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        self._alter(schema_editor, f"RESET ({', '.join(AUTOVACUUM)})")

    def _alter(self, schema_editor: Any, change: str) -> None:
        if schema_editor.connection.vendor == "postgresql":
            table = schema_editor.quote_name(self.table)
            schema_editor.execute(f"ALTER TABLE {table} {change}")

    def describe(self) -> str:
        return f"Tune autovacuum for the scheduled table {self.table}"

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return (self.__class__.__qualname__, [self.table], {})
