"""An index for the reminders' admin search (ScheduledTrainingNotification.search_fields): the
start of a team's name, any case. Django's `^` search is UPPER(name::text) LIKE 'PREFIX%', which
a B-tree on UPPER(name) serves only with text_pattern_ops (the database's collation is not C).
PostgreSQL only (SQLite, the embedded mode, has no operator classes); built CONCURRENTLY, so
teams' writes go on meanwhile.
"""

from typing import Any

from django.db import migrations

INDEX = "team_name_prefix"


def create(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {INDEX}"
            " ON trainings_team (UPPER(name::text) text_pattern_ops)"
        )


def drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction

    dependencies = [("trainings", "0011_effect_started_at")]

    operations = [migrations.RunPython(create, drop)]
