"""The statements every handling runs, written once per model as SQL.

A handling runs one to five short statements (lock the row, claim it, mark it handled);
building each through the ORM (a QuerySet, its WHERE tree, the compiler) cost more CPU than
the database spent on it, for every event. They are plain enough to write out: the same
conditions as `querysets.awaiting_handling_q` and `in_flight_q`, which tests hold them to.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.db import connections
from django.db.models.functions import Now
from django.db.models.sql import Query

from scheduling.rows.databases import database_of
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.states import Status

DELIVERED = Status.DELIVERED.value
# The status written as a range of one value: the same rows, but no partial index's predicate
# (awaiting_handling: delivered and not handled) is implied, so the planner takes the primary
# key. With statistics from before a burst (no row delivered yet) it took that index instead
# and read every entry of it for one row: at 60,000 rows awaiting handling, handling went
# from 450 to 100 emails a second.
ONE_ROW_DELIVERED = f"status BETWEEN '{DELIVERED}' AND '{DELIVERED}'"
AWAITING = f"{ONE_ROW_DELIVERED} AND handled_at IS NULL AND effect_started_at IS NULL"
IN_FLIGHT = f"{ONE_ROW_DELIVERED} AND handled_at IS NULL AND effect_started_at IS NOT NULL"


class HandlingStatements:
    """One model's handling statements, run on its database."""

    def __init__(self, model: type[ScheduledEvent], using: str) -> None:
        self.model = model
        self.using = using
        connection = connections[using]
        quote = connection.ops.quote_name
        table, pk = quote(model._meta.db_table), quote(model._meta.pk.column)
        fields = model._meta.concrete_fields
        self.attnames = [field.attname for field in fields]
        columns = ", ".join(quote(field.column) for field in fields)
        this = f"{pk} = %s AND version = %s"
        # The database's clock, as the ORM's Now() reads it there (the embedded SQLite too).
        now, _ = Query(model).get_compiler(using=using).compile(Now())
        lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
        self.lock_sql = f"SELECT {columns} FROM {table} WHERE {pk} = %s{lock}"
        self.handled_sql = f"UPDATE {table} SET handled_at = {now} WHERE {pk} = %s"
        self.taken_sql = f"UPDATE {table} SET handled_at = {now} WHERE {this} AND {AWAITING}"
        self.claim_sql = (
            f"UPDATE {table} SET effect_started_at = {now}, updated_at = {now}"
            f" WHERE {this} AND {AWAITING}"
        )
        self.unclaim_sql = (
            f"UPDATE {table} SET effect_started_at = NULL, updated_at = {now}"
            f" WHERE {this} AND {IN_FLIGHT}"
        )
        # One statement for two rows: this one handled, the next one's effect claimed.
        self.handled_and_claim_sql = (
            f"UPDATE {table} SET"
            f" handled_at = CASE WHEN {pk} = %s THEN {now} ELSE handled_at END,"
            f" effect_started_at = CASE WHEN {pk} = %s THEN {now} ELSE effect_started_at END,"
            f" updated_at = {now}"
            f" WHERE ({this} AND {IN_FLIGHT}) OR ({this} AND {AWAITING})"
            f" RETURNING {pk}"
        )
        self.lock_claimed_sql = f"SELECT 1 FROM {table} WHERE {this} AND {IN_FLIGHT}{lock}"
        self.claimed_handled_sql = (
            f"UPDATE {table} SET handled_at = {now}, updated_at = {now}"
            f" WHERE {this} AND {IN_FLIGHT}"
        )

    def _execute(self, sql: str, params: list[Any]) -> Any:
        cursor = connections[self.using].cursor()
        cursor.execute(sql, params)
        return cursor

    def lock(self, pk: Any) -> ScheduledEvent | None:
        """The row, locked FOR UPDATE until the transaction ends; None if it is gone."""
        with self._execute(self.lock_sql, [pk]) as cursor:
            found = cursor.fetchone()
        return None if found is None else self.model.from_db(self.using, self.attnames, found)

    def mark_handled(self, pk: Any) -> None:
        """At-least-once, the row locked by this transaction: handled."""
        self._execute(self.handled_sql, [pk]).close()

    def mark_handled_if_awaiting(self, pk: Any, version: int) -> bool:
        """At-least-once, first in the row's effect transaction: locks, checks and marks in
        one statement: the row marked handled if this version still awaits handling (committed
        with the effect, or rolled back with it); whether it did."""
        with self._execute(self.taken_sql, [pk, version]) as cursor:
            return bool(cursor.rowcount == 1)

    def claim(self, pk: Any, version: int) -> bool:
        """At-most-once: the effect begins, if this version awaits handling still."""
        with self._execute(self.claim_sql, [pk, version]) as cursor:
            return bool(cursor.rowcount == 1)

    def unclaim(self, pk: Any, version: int) -> None:
        """Take back a claim whose effect has not begun (nothing was done under it)."""
        self._execute(self.unclaim_sql, [pk, version]).close()

    def lock_claimed(self, pk: Any, version: int) -> bool:
        """The claimed row locked (still in flight as this version)."""
        with self._execute(self.lock_claimed_sql, [pk, version]) as cursor:
            return cursor.fetchone() is not None

    def mark_handled_and_claim(self, row: ScheduledEvent, following: ScheduledEvent) -> bool:
        """`row` (claimed, locked) handled and `following` claimed, in one statement; whether
        the claim was taken (`following` still awaited handling as its version)."""
        params = [row.pk, following.pk, row.pk, row.version, following.pk, following.version]
        with self._execute(self.handled_and_claim_sql, params) as cursor:
            return following.pk in {found for (found,) in cursor.fetchall()}

    def mark_claimed_handled(self, pk: Any, version: int) -> None:
        self._execute(self.claimed_handled_sql, [pk, version]).close()


def statements_for(model: type[ScheduledEvent]) -> HandlingStatements:
    return _statements(model, database_of(model))


@cache
def _statements(model: type[ScheduledEvent], using: str) -> HandlingStatements:
    return HandlingStatements(model, using)
