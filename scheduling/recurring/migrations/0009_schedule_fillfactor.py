"""Room on each page of recurring_schedule for the sweep's bookkeeping (last_fired_at,
fire_count: no index holds either) to be a heap-only update, written beside the old version
without an entry in each of the table's three indexes. At 30 million schedules, 0.3% of those
updates were heap-only on full pages. On PostgreSQL only; no rewrite: the setting applies to the
pages written from now on (VACUUM FULL or pg_repack give existing pages the room too)."""

from typing import Any

from django.db import migrations

FILLFACTOR = 90


def set_fillfactor(apps: Any, schema_editor: Any) -> None:
    table = schedule_table(apps, schema_editor)
    if table is not None:
        schema_editor.execute(f"ALTER TABLE {table} SET (fillfactor = {FILLFACTOR})")


def reset_fillfactor(apps: Any, schema_editor: Any) -> None:
    table = schedule_table(apps, schema_editor)
    if table is not None:
        schema_editor.execute(f"ALTER TABLE {table} RESET (fillfactor)")


def schedule_table(apps: Any, schema_editor: Any) -> str | None:
    """The schedules' table, quoted; None off PostgreSQL (nothing to set)."""
    if schema_editor.connection.vendor != "postgresql":
        return None
    model = apps.get_model("scheduling_recurring", "RecurringSchedule")
    return str(schema_editor.quote_name(model._meta.db_table))


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling_recurring", "0008_schedule_jitter"),
    ]

    operations = [
        migrations.RunPython(set_fillfactor, reset_fillfactor),
    ]
