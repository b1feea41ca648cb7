"""Indexes for the scheduled emails' admin search (ScheduledPurchase.search_fields): the start of
a customer's email or name, any case. Django's `^` search is UPPER(col::text) LIKE 'PREFIX%',
which a B-tree on UPPER(col) serves only with text_pattern_ops (the database's collation is not
C). PostgreSQL only (SQLite, the embedded mode, has no operator classes); built CONCURRENTLY, so
customers' writes go on meanwhile.
"""

from typing import Any

from django.db import migrations

INDEXES = {
    "customer_email_prefix": "UPPER(email::text) text_pattern_ops",
    "customer_name_prefix": "UPPER(name::text) text_pattern_ops",
}


def create(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        for name, expression in INDEXES.items():
            schema_editor.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name}"
                f" ON purchases_customer ({expression})"
            )


def drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        for name in INDEXES:
            schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction

    dependencies = [("purchases", "0009_email_header_text_on_one_line")]

    operations = [migrations.RunPython(create, drop)]
