"""cron_scale's bulk rows: schedules with their pending occurrence, made in SQL in batches.

The full load drops the two tables' secondary indexes, unique constraints and the foreign key
first and builds them again at the end: one sort per index instead of 30 million scattered
insertions into each (the `name` indexes above all, whose keys arrive out of order), and no
deferred foreign-key check with its row lock per occurrence. What it drops is written to a
table of its own first, so a load cut short is repaired by the next run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import connection
from django.db.models import Field, Model
from psycopg import sql as psql

from bench.common import sql, vacuum
from scheduling.recurring.models import RecurringSchedule, ScheduledOccurrence

LOAD_PARALLEL = 2
BATCH = 500_000  # schedules a statement: progress every few seconds, a bounded statement
TABLES = ("recurring_schedule", "scheduled_occurrence")
SAVED = "bench_cron_dropped_ddl"  # what the load dropped, to build again (even after a crash)
CRON_FROM_G = "mod(s, 60) || ' ' || mod(s / 60, 60) || ' ' || (s / 3600) || ' * * ?'"


def literal(value: Any) -> str:
    """An SQL literal of a value (a text, a timestamp); it must hold no `%`."""
    connection.ensure_connection()
    return psql.Literal(value).as_string(connection.connection)


def default(field: Field[Any, Any], value: Any) -> str:
    prepared = field.get_db_prep_value(value, connection)
    return f"{literal(prepared)}::{field.db_type(connection)}"


def columns(model: type[Model], given: dict[str, str]) -> tuple[str, str]:
    """The column list and the SELECT list of an INSERT: the SQL expressions `given` and, for
    every other NOT NULL column, the model's default (new columns need no change here)."""
    values = dict(given)
    for field in model._meta.concrete_fields:
        if field.primary_key or field.null or field.column in values or not field.has_default():
            continue
        values[field.column] = default(field, field.get_default())
    quote = connection.ops.quote_name
    return ", ".join(quote(name) for name in values), ", ".join(values.values())


def schedule_columns(name: str, cron: str, starts_at: str, queue: str, template: str) -> dict:
    """recurring_schedule's given columns: daily crons in UTC to a queue, fire_once."""
    return {
        "name": name,
        "cron": cron,
        "timezone": "'UTC'",
        "template_timezone": "''",
        "task": "''",
        "queue": literal(queue),
        "payload_template": f"{literal(template)}::jsonb",
        "enabled": "true",
        "misfire_policy": "'fire_once'",
        "catchup_window": "interval '1 day'",
        "starts_at": starts_at,
        "version": "1",
        "created_at": "now()",
        "updated_at": "now()",
    }


def occurrence_columns(due_at: str) -> dict[str, str]:
    """scheduled_occurrence's given columns over the alias `s` (the schedule's id, version)."""
    return {
        "schedule_id": "s.id",
        "schedule_version": "1",
        "manual": "false",
        "missed_run": "0",
        "catch_up": "false",
        "due_at": due_at,
        "status": "'pending'",
        "version": "1",
        "attempts": "0",
        "cancel_reason": "''",
        "last_error": "''",
        "created_at": "now()",
        "updated_at": "now()",
    }


def insert_pairs(
    prefix: str, count: int, schedule: dict[str, str], due_at: str, *, parallel: int = 1
) -> None:
    """`count` schedules named prefix-1.. with their pending occurrence, BATCH a statement.

    The expressions may use `g` (1..count) and `s` (g's second of the day, 1..86,399) in
    `schedule`, and the new schedule's `s.id` and `s.g` in `due_at`; values as literals.
    `parallel` statements at once, each on a connection of its own.
    """
    names, values = columns(RecurringSchedule, schedule)
    occurrences, picks = columns(ScheduledOccurrence, occurrence_columns(due_at))
    statement = (
        f"WITH s AS (INSERT INTO recurring_schedule ({names}) SELECT {values}"
        " FROM generate_series(%s::bigint, %s::bigint) g,"
        " LATERAL (SELECT mod(g, 86399) + 1 AS s) t"
        f" RETURNING id, substr(name, {len(prefix) + 2})::bigint AS g)"
        f" INSERT INTO scheduled_occurrence ({occurrences}) SELECT {picks} FROM s ORDER BY s.id"
    )
    started, done = time.perf_counter(), 0
    ranges = [(first, min(count, first + BATCH - 1)) for first in range(1, count + 1, BATCH)]
    with ThreadPoolExecutor(parallel) as pool:
        for inserted in pool.map(lambda bounds: insert_batch(statement, *bounds), ranges):
            done += inserted
            progress(f"{prefix} schedules", done, count, started)


def insert_batch(statement: str, first: int, last: int) -> int:
    try:
        sql(statement, [first, last])
    finally:
        connection.close()  # this thread's: the pool's threads outlive the load
    return last - first + 1


def progress(what: str, done: int, total: int, started: float) -> None:
    elapsed = time.perf_counter() - started
    rate = done / elapsed if elapsed else 0.0
    print(f"    {what}: {done:,} of {total:,}, {elapsed:,.0f} s ({rate:,.0f}/s)", flush=True)


def load_rest(count: int, *, queue: str, template: str) -> None:
    """`count` schedules named cron-g, first firing two days from now at second g mod 86,399 + 1
    of the day (its cron's); their indexes dropped meanwhile and built again."""
    sql("TRUNCATE scheduled_occurrence, recurring_schedule RESTART IDENTITY")
    day = "date_trunc('day', now()) + interval '3 days'"
    schedule = schedule_columns("'cron-' || g", CRON_FROM_G, day, queue, template)
    due = f"{day} + ((mod(s.g, 86399) + 1) * interval '1 second')"
    # Two statements at once: with no index but the primary keys, they hardly wait on each
    # other, and each keeps a core busy.
    without_indexes(lambda: insert_pairs("cron", count, schedule, due, parallel=LOAD_PARALLEL))
    vacuum(*TABLES)


def without_indexes(load: Callable[[], None]) -> None:
    restore_dropped()  # a load cut short left them in SAVED
    save_and_drop()
    load()
    restore_dropped()


def droppable() -> list[tuple[str, str, str]]:
    """(drop, create) statements of the tables' indexes and constraints but primary keys."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT format('ALTER TABLE %%I DROP CONSTRAINT %%I', c.conrelid::regclass, c.conname),"
            " format('ALTER TABLE %%I ADD CONSTRAINT %%I %%s', c.conrelid::regclass, c.conname,"
            " pg_get_constraintdef(c.oid)), c.conname"
            " FROM pg_constraint c WHERE c.conrelid = ANY(%s::regclass[]) AND c.contype IN ('u', 'f')"
            " UNION ALL SELECT format('DROP INDEX %%I', i.indexrelid::regclass),"
            # A partitioned table's index reads ON ONLY (the parent alone): built again as one
            # over every partition.
            " replace(pg_get_indexdef(i.indexrelid), ' ON ONLY ', ' ON '),"
            " i.indexrelid::regclass::text FROM pg_index i"
            " WHERE i.indrelid = ANY(%s::regclass[]) AND NOT i.indisprimary AND NOT EXISTS"
            " (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)",
            [list(TABLES), list(TABLES)],
        )
        return list(cursor.fetchall())


def save_and_drop() -> None:
    found = droppable()
    # Foreign keys last when building: they need the unique indexes they rest on.
    found.sort(key=lambda row: "FOREIGN KEY" in row[1])
    sql(f"CREATE TABLE IF NOT EXISTS {SAVED} (position int PRIMARY KEY, statement text, name text)")
    for position, (_, create, name) in enumerate(found):
        sql(f"INSERT INTO {SAVED} VALUES (%s, %s, %s)", [position, create, name])
    for drop, _, _ in reversed(found):
        sql(drop)


def restore_dropped() -> None:
    sql(f"CREATE TABLE IF NOT EXISTS {SAVED} (position int PRIMARY KEY, statement text, name text)")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT position, statement, name FROM {SAVED} ORDER BY position")
        saved = cursor.fetchall()
        # One sort in memory per index where it fits; the server's setting is for autovacuum.
        cursor.execute("SET maintenance_work_mem = '1GB'")
    for position, statement, name in saved:
        started = time.perf_counter()
        sql(statement)
        sql(f"DELETE FROM {SAVED} WHERE position = %s", [position])
        print(f"    built {name}: {time.perf_counter() - started:,.1f} s", flush=True)
    sql("RESET maintenance_work_mem")
