"""Migration operations for scheduled tables, and for the tables of the optional apps."""

from typing import Any

from django.db import router
from django.db.migrations.operations import CreateModel, RunPython
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
        if self._allowed(app_label, schema_editor, to_state):
            settings = ", ".join(f"{name} = {value}" for name, value in AUTOVACUUM.items())
            self._alter(schema_editor, f"SET ({settings})")

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if self._allowed(app_label, schema_editor, from_state):
            self._alter(schema_editor, f"RESET ({', '.join(AUTOVACUUM)})")

    def _allowed(self, app_label: str, schema_editor: Any, state: Any) -> bool:
        """Whether the routers put the table on this database (a domain on its own database:
        its tables are on that one only)."""
        alias = schema_editor.connection.alias
        for model in state.apps.get_app_config(app_label).get_models():
            if model._meta.db_table == self.table:
                return bool(self.allow_migrate_model(alias, model))
        return bool(router.allow_migrate(alias, app_label))

    def _alter(self, schema_editor: Any, change: str) -> None:
        if schema_editor.connection.vendor == "postgresql":
            table = schema_editor.quote_name(self.table)
            schema_editor.execute(f"ALTER TABLE {table} {change}")

    def describe(self) -> str:
        return f"Tune autovacuum for the scheduled table {self.table}"

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return (self.__class__.__qualname__, [self.table], {})


class AdoptOrCreateModel(CreateModel):
    """CreateModel for a table an earlier layout may already have created under another app.

    Recurring schedules and keyed jobs were models of the `scheduling` app before they became
    apps of their own, with the same tables. On such a database the table (with its rows,
    indexes and constraints) is adopted as it is; on a new one it is created.
    """

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        model = to_state.apps.get_model(app_label, self.name)
        if model._meta.db_table in schema_editor.connection.introspection.table_names():
            return
        super().database_forwards(app_label, schema_editor, from_state, to_state)


def move_content_types(models: list[str], *, old_label: str, new_label: str) -> RunPython:
    """Give the old app's content types to the new app, so permissions granted on the models
    (and admin log entries) follow them instead of being left on stale rows."""

    def forwards(apps: Any, schema_editor: Any) -> None:
        connection = schema_editor.connection
        if "django_content_type" not in connection.introspection.table_names():
            return
        names = ", ".join(["%s"] * len(models))
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE django_content_type SET app_label = %s WHERE app_label = %s"
                f" AND model IN ({names}) AND model NOT IN"
                " (SELECT model FROM django_content_type WHERE app_label = %s)",
                [new_label, old_label, *models, new_label],
            )

    return RunPython(forwards, RunPython.noop)


# Django writes an operation's module into migrations: the public one, which stays for good.
TuneScheduledTable.__module__ = "scheduling.migration_operations"
AdoptOrCreateModel.__module__ = "scheduling.migration_operations"
