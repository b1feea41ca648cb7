"""`flush` under the test settings: what TransactionTestCase runs after each test that commits
(`django_db(transaction=True)`), made cheap.

Django's empties every table of the database (about a hundred here), then re-creates every
content type and permission through post_migrate: 0.2 s a database, after each such test. This
one empties only the tables that hold rows, and leaves alone the rows migrate left
(`remember_migrated_rows`, called once the test databases exist). When a test changed those,
or nothing was remembered for the database, it does what Django's does.
"""

from typing import Any

from django.core.management.commands import flush
from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

# The rows migrate left, by database: a fingerprint of each table that held rows.
MIGRATED_ROWS: dict[str, dict[str, str]] = {}
# The other tables of the models, by database: the ones a test fills.
TEST_TABLES: dict[str, list[str]] = {}


def remember_migrated_rows() -> None:
    for alias in connections:
        connection = connections[alias]
        if connection.settings_dict.get("TEST", {}).get("MIRROR"):
            continue
        tables = model_tables(connection)
        migrated = tables_holding_rows(connection, tables)
        MIGRATED_ROWS[alias] = fingerprints(connection, migrated)
        TEST_TABLES[alias] = [table for table in tables if table not in migrated]


def model_tables(connection: BaseDatabaseWrapper) -> list[str]:
    return sorted(connection.introspection.django_table_names(only_existing=True))


def tables_holding_rows(connection: BaseDatabaseWrapper, tables: list[str]) -> list[str]:
    if not tables:
        return []
    quote = connection.ops.quote_name
    probes = " UNION ALL ".join(
        f"SELECT %s WHERE EXISTS (SELECT 1 FROM {quote(table)})" for table in tables
    )
    with connection.cursor() as cursor:
        cursor.execute(probes, tables)
        return [table for (table,) in cursor.fetchall()]


def fingerprints(connection: BaseDatabaseWrapper, tables: list[str]) -> dict[str, str]:
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        found = {}
        for table in tables:
            cursor.execute(
                f"SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM {quote(table)} t"
            )
            found[table] = cursor.fetchone()[0]
    return found


class Command(flush.Command):
    def handle(self, **options: Any) -> None:
        alias = options["database"]
        if not self.keeps_migrated_rows(alias, options):
            super().handle(**options)
            return
        connection = connections[alias]
        filled = tables_holding_rows(connection, TEST_TABLES[alias])
        # DELETE, not TRUNCATE: on a few rows it costs nothing, where TRUNCATE makes new files
        # for each table (and each it cascades to). Django's foreign keys are checked at commit,
        # by then every table that held a row is empty.
        with transaction.atomic(using=alias), connection.cursor() as cursor:
            for table in filled:
                cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")
        migrated = MIGRATED_ROWS[alias]
        if fingerprints(connection, list(migrated)) != migrated:
            super().handle(**options)
            remember_migrated_rows()

    @staticmethod
    def keeps_migrated_rows(alias: str, options: dict[str, Any]) -> bool:
        """TransactionTestCase's own call (no sequence reset, no prompt) on a remembered database."""
        return (
            alias in MIGRATED_ROWS
            and not options["interactive"]
            and not options.get("reset_sequences", True)
            and not options.get("inhibit_post_migrate", False)
        )
