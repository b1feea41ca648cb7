"""The sweep's statements that bypass the ORM, by name, with the ORM's equivalent on other
databases (SQLite, in the embedded mode). The rest of the sweep reads as steps over these."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import F, QuerySet
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from scheduling.rows import arrays
from scheduling.rows.actors import process_actor
from scheduling.rows.conf import SchedulingSettings
from scheduling.rows.databases import database_of, on_postgresql
from scheduling.rows.fairness import in_turns
from scheduling.rows.history import record
from scheduling.rows.history.models import EventHistory
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.states import Status

# statement_timestamp(), like Django's Now(): the same clock the QuerySet methods write with.

# ORDER BY due_at LIMIT 1 walks the partial index whatever the statistics say; a plain EXISTS
# gets a sequential scan while stale statistics still count drained rows as pending.
DUE_PROBE = (
    "SELECT 1 FROM {table} WHERE status = 'pending' AND due_at <= {cutoff} ORDER BY due_at LIMIT 1"
)

NEXT_DUE_IN = (
    "SELECT EXTRACT(EPOCH FROM due_at - statement_timestamp()) FROM {table}"
    " WHERE status = 'pending' ORDER BY due_at LIMIT 1"
)

# synchronous_commit off is safe for our guarantees: the batch is published before this commit,
# so a commit lost in a crash only puts its rows back to pending, to be published again with the
# same ids (a duplicate that handlers absorb), never lost and never early. It saves a WAL flush
# per batch.
# The idle timeout lets a frozen sweeper's claim go (SIGSTOP, a stuck network): after about the
# lock's TTL PostgreSQL ends its session, its rows are pending again and another sweeper
# delivers them; the frozen one, thawed, cannot commit what it published, and handlers see
# those duplicates' ids as handled already.
# jit off: the sweep's statements are short, and on a partitioned table the planner's estimates
# (summed over partitions) can cross jit_above_cost: compiling then costs a second a statement.
# No parallel workers, for the same reason: every statement addresses a batch's rows by key, so
# a parallel plan comes only from an estimate gone wrong (a fresh load without statistics), and
# starting its workers costs more than the statement (seen at 30 million: sweep sessions
# waiting in IPC:MessageQueueReceive and IPC:BgWorkerShutdown).
CONFIGURE_SWEEP_TRANSACTION = (
    "SELECT set_config('synchronous_commit', 'off', true), set_config('jit', 'off', true),"
    " set_config('max_parallel_workers_per_gather', '0', true),"
    " set_config('idle_in_transaction_session_timeout', %s, true),"
    " statement_timestamp()"
)

# Array literals instead of the ORM's `IN (%s, %s, ...)`, a placeholder a row, which psycopg
# would interpolate client-side for every batch (scheduling.rows.arrays). Each row by its
# (id, due_at): on a table partitioned by due time, one partition's index is probed a row,
# where an id alone probes every partition's. The due times again as a plain array: the
# partitions holding none of them are pruned before the statement runs, whatever join the
# planner picks (a hash join over small partitions would scan them all).
MARK_DELIVERED = (
    "UPDATE {table} AS t SET status = %s, delivered_at = statement_timestamp(),"
    " attempts = t.attempts + 1, last_error = '', updated_at = statement_timestamp()"
    " FROM unnest(%s::{pk_type}[], %s::timestamptz[]) AS claimed(pk, due_at)"
    " WHERE t.{pk} = claimed.pk AND t.due_at = claimed.due_at AND t.due_at = ANY(%s::timestamptz[])"
)

# The claim of a model with a fairness_key: due rows round-robin across its keys, lowest turns
# first (scheduling.rows.fairness). A window function cannot share a level with FOR UPDATE, so
# the inner query ranks and picks candidates, and the outer one locks them. SKIP LOCKED: rows
# another sweeper holds are left to it; it ranks them too (they are pending until it commits),
# so the inner query picks FAIR_CANDIDATES batches' worth for the outer one to skip through.
# The outer WHERE is checked again on each row it locks: one delivered or moved since the
# statement's snapshot is not claimed.
FAIR_CLAIM = """
    SELECT {columns} FROM {table} AS claimable
    JOIN ({candidates}) AS candidate
        ON claimable.{pk} = candidate.pk AND claimable.due_at = candidate.due_at
    WHERE claimable.status = 'pending' AND claimable.due_at <= %s
    ORDER BY candidate.turn, candidate.due_at, candidate.pk
    LIMIT %s FOR UPDATE OF claimable SKIP LOCKED
"""
FAIR_CANDIDATES = 4

# The same claim over candidates ranked before (sweep/turns.py), given as arrays in turn order.
CLAIM_CANDIDATES = """
    SELECT {columns} FROM {table} AS claimable
    JOIN unnest(%s::bigint[], %s::timestamptz[]) WITH ORDINALITY AS candidate(pk, due_at, place)
        ON claimable.{pk} = candidate.pk AND claimable.due_at = candidate.due_at
    WHERE claimable.status = 'pending' AND claimable.due_at <= %s
    ORDER BY candidate.place
    LIMIT %s FOR UPDATE OF claimable SKIP LOCKED
"""

# An at-most-once row whose effect began (effect_started_at) is in flight: never republished.
UNHANDLED = (
    "status = 'delivered' AND handled_at IS NULL AND effect_started_at IS NULL"
    " AND delivered_at < {clock} - %(timeout)s"
)
UNHANDLED_PROBE = "SELECT 1 FROM {table} WHERE {unhandled} LIMIT 1"
# Each requeued row's history is written in the same statement (its shape: history/record.py).
REQUEUE_UNHANDLED = (
    """
    WITH stale AS (
        SELECT {pk} AS stale_pk FROM {table} WHERE {unhandled}
        ORDER BY delivered_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED
    ), requeued AS (
        UPDATE {table} SET
            status = CASE WHEN attempts >= %(max)s THEN 'failed' ELSE 'pending' END,
            business_due_at = CASE WHEN attempts >= %(max)s THEN business_due_at
                ELSE COALESCE(business_due_at, due_at) END,
            due_at = CASE WHEN attempts >= %(max)s THEN due_at ELSE {clock} END,
            last_error = %(note)s, updated_at = {clock}
        FROM stale WHERE {pk} = stale.stale_pk
        RETURNING {pk} AS id, status, attempts, version, delivered_at,
            COALESCE(business_due_at, due_at) AS business_time
    ), logged AS ("""
    + record.REQUEUED_SQL
    + """)
    SELECT id, status FROM requeued
"""
)


def quote(name: str, using: str = DEFAULT_DB_ALIAS) -> str:
    return connections[using].ops.quote_name(name)


def table(model: type[ScheduledEvent]) -> str:
    return quote(model._meta.db_table, database_of(model))


def pk_column(model: type[ScheduledEvent]) -> str:
    return quote(model._meta.pk.column, database_of(model))


def fetch_one(
    sql: str, params: Any = None, using: str = DEFAULT_DB_ALIAS
) -> tuple[Any, ...] | None:
    with connections[using].cursor() as cursor:
        cursor.execute(sql, params)
        row: tuple[Any, ...] | None = cursor.fetchone()
    return row


def has_due_rows(model: type[ScheduledEvent], now: datetime | None) -> bool:
    """A cheap probe, so an idle tick skips compiling and running the claim.

    Only a shortcut: the claim alone decides what is published.
    """
    using = database_of(model)
    if not on_postgresql(using):
        return model.objects.due(now).exists()
    cutoff = "%s" if now is not None else "statement_timestamp()"
    sql = DUE_PROBE.format(table=table(model), cutoff=cutoff)
    return fetch_one(sql, [now] if now is not None else None, using) is not None


def seconds_until_next_due(model: type[ScheduledEvent]) -> float | None:
    """How long until the next pending row falls due, by the database's clock; None if none."""
    using = database_of(model)
    if not on_postgresql(using):
        return None
    row = fetch_one(NEXT_DUE_IN.format(table=table(model)), using=using)
    return float(row[0]) if row else None


def configure_sweep_transaction(
    conf: SchedulingSettings, using: str = DEFAULT_DB_ALIAS
) -> datetime | None:
    """Set the transaction's options; on PostgreSQL also return the database's clock, read in
    the same round trip (the claim's cutoff)."""
    if not on_postgresql(using):
        return None
    timeout_ms = max(int(conf.lock_ttl * 1000), 1000)
    row = fetch_one(CONFIGURE_SWEEP_TRANSACTION, [str(timeout_ms)], using)
    assert row is not None
    clock: datetime = row[-1]
    return clock


def claim_fairly(
    model: type[ScheduledEvent],
    columns: list[str],
    *,
    cutoff: datetime,
    limit: int,
    skip: Collection[int],
) -> list[tuple[Any, ...]]:
    """Up to `limit` due rows' `columns` (attnames), locked, lowest turns of the model's
    fairness_key first: ranked and claimed in one statement."""
    inner, inner_params = due_in_turns(model, cutoff, skip, limit * FAIR_CANDIDATES)
    sql = FAIR_CLAIM.format(candidates=inner, **claim_parts(model, columns))
    with connections[database_of(model)].cursor() as cursor:
        cursor.execute(sql, [*inner_params, cutoff, limit])
        return cursor.fetchall()


def rank_due(
    model: type[ScheduledEvent], *, cutoff: datetime, skip: Collection[int], count: int
) -> list[tuple[Any, datetime]]:
    """The first `count` due rows in turns of the model's fairness_key: (pk, due_at) each."""
    inner, params = due_in_turns(model, cutoff, skip, count)
    with connections[database_of(model)].cursor() as cursor:
        cursor.execute(f"SELECT pk, due_at FROM ({inner}) AS ranked", params)
        return cursor.fetchall()


def claim_candidates(
    model: type[ScheduledEvent],
    columns: list[str],
    candidates: list[tuple[Any, datetime]],
    *,
    cutoff: datetime,
    limit: int,
) -> list[tuple[Any, ...]]:
    """Up to `limit` of the ranked `candidates` still due and pending, locked, in their order."""
    pks, due_times = [pk for pk, _ in candidates], [due_at for _, due_at in candidates]
    sql = CLAIM_CANDIDATES.format(**claim_parts(model, columns))
    with connections[database_of(model)].cursor() as cursor:
        cursor.execute(sql, [pks, due_times, cutoff, limit])
        return cursor.fetchall()


def due_in_turns(
    model: type[ScheduledEvent], cutoff: datetime, skip: Collection[int], count: int
) -> tuple[str, tuple[Any, ...]]:
    """The SQL of the first `count` due rows in turns (pk, due_at, turn), and its parameters."""
    using = database_of(model)
    assert model.fairness_key is not None
    due = model.objects.using(using).filter(status=Status.PENDING, due_at__lte=cutoff)
    if skip:
        due = due.exclude(pk__in=skip)
    ranked = in_turns(due, model.fairness_key).values("pk", "due_at", "turn")[:count]
    return ranked.query.get_compiler(using=using).as_sql()


def claim_parts(model: type[ScheduledEvent], columns: list[str]) -> dict[str, str]:
    using = database_of(model)
    column_of = {field.attname: field.column for field in model._meta.concrete_fields}
    selected = ", ".join(f"claimable.{quote(column_of[name], using)}" for name in columns)
    return {"columns": selected, "table": table(model), "pk": pk_column(model)}


def pk_type(model: type[ScheduledEvent]) -> str:
    """The primary key's column type (bigint, integer, uuid), for an array of keys."""
    primary: Any = model._meta.pk
    return str(primary.rel_db_type(connections[database_of(model)]))


def mark_delivered(model: type[ScheduledEvent], rows: list[ScheduledEvent]) -> int:
    using = database_of(model)
    if not on_postgresql(using):
        return model.objects.filter(pk__in=[row.pk for row in rows]).update(
            status=Status.DELIVERED,
            delivered_at=Now(),
            attempts=F("attempts") + 1,
            last_error="",
            updated_at=Now(),
        )
    sql = MARK_DELIVERED.format(table=table(model), pk=pk_column(model), pk_type=pk_type(model))
    keys, dues = arrays.keys(row.pk for row in rows), arrays.times(row.due_at for row in rows)
    distinct_dues = arrays.times({row.due_at for row in rows})
    with connections[using].cursor() as cursor:
        cursor.execute(sql, [Status.DELIVERED.value, keys, dues, distinct_dues])
        count: int = cursor.rowcount
    return count


@dataclass(frozen=True)
class Unhandled:
    """Rows published more than `timeout` ago and not handled yet, up to `limit` at a time."""

    model: type[ScheduledEvent]
    timeout: timedelta
    limit: int
    max_attempts: int
    note: str  # the last_error they get
    now: datetime | None  # a fixed clock (tests); else the database's

    def sql(self, template: str) -> str:
        clock = "%(now)s" if self.now is not None else "statement_timestamp()"
        return template.format(
            table=table(self.model),
            pk=pk_column(self.model),
            clock=clock,
            unhandled=UNHANDLED.format(clock=clock),
            history=quote(EventHistory._meta.db_table, self.using),
        )

    @property
    def using(self) -> str:
        return database_of(self.model)

    def params(self) -> dict[str, Any]:
        return {
            "now": self.now,
            "timeout": self.timeout,
            "limit": self.limit,
            "max": self.max_attempts,
            "note": self.note,
            "label": self.model._meta.label_lower,
            "actor": process_actor("reconcile"),
        }

    def rows(self) -> QuerySet[ScheduledEvent]:
        """The ORM's version (no limit, no SKIP LOCKED), for other databases."""
        cutoff = (self.now or timezone.now()) - self.timeout
        return self.model.objects.awaiting_handling().filter(delivered_at__lt=cutoff)


def any_unhandled(unhandled: Unhandled) -> bool:
    if not on_postgresql(unhandled.using):
        return unhandled.rows().exists()
    sql = unhandled.sql(UNHANDLED_PROBE)
    return fetch_one(sql, unhandled.params(), unhandled.using) is not None


def requeue_rows(unhandled: Unhandled) -> tuple[list[Any], list[Any]]:
    """Unhandled rows back to pending, due now; out of tries, failed. The primary keys of
    (requeued, failed)."""
    if not on_postgresql(unhandled.using):
        return requeue_rows_portably(unhandled)
    with connections[unhandled.using].cursor() as cursor:
        cursor.execute(unhandled.sql(REQUEUE_UNHANDLED), unhandled.params())
        outcomes = cursor.fetchall()
    failed = [pk for pk, status in outcomes if status == Status.FAILED.value]
    return [pk for pk, status in outcomes if status != Status.FAILED.value], failed


def requeue_rows_portably(unhandled: Unhandled) -> tuple[list[Any], list[Any]]:
    stale, note = list(unhandled.rows()), unhandled.note
    out_of_tries = [row.pk for row in stale if row.attempts >= unhandled.max_attempts]
    rows = unhandled.model.objects.filter(pk__in=[row.pk for row in stale])
    rows.filter(pk__in=out_of_tries).update(status=Status.FAILED, last_error=note, updated_at=Now())
    rows.exclude(pk__in=out_of_tries).update(
        status=Status.PENDING,
        business_due_at=Coalesce(F("business_due_at"), F("due_at")),
        due_at=Now(),
        last_error=note,
        updated_at=Now(),
    )
    record.write(record.requeued(stale, out_of_tries, note), using=unhandled.using)
    return [row.pk for row in stale if row.pk not in out_of_tries], out_of_tries
