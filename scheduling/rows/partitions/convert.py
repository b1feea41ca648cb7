"""Turn a plain scheduled table, rows and all, into one range-partitioned on due_at.

Online, in three steps (docs/partitioning.md has the locks and their measured lengths):
1. prepare, no long lock: a unique index (id, due_at) built CONCURRENTLY, and a CHECK
   `due_at < bound` added NOT VALID then VALIDATEd (SHARE UPDATE EXCLUSIVE: reads and writes go
   on), `bound` being the first interval boundary after both the latest due_at and `premake`
   intervals from now (a write due past it is refused while the CHECK is validated; an empty
   table, in its own migration, has no writer yet: its bound is the interval after now);
2. switch, one short transaction under ACCESS EXCLUSIVE on the table: catalog changes only.
   The table is renamed `<table>_before`, a partitioned parent takes its name, its columns,
   checks, foreign keys and indexes (each index created ON ONLY the parent and the old table's
   own attached to it), and the old table is attached as the partition FROM (MINVALUE) TO
   (bound): the CHECK spares the scan, the unique index the primary key's build;
3. maintain(): the DEFAULT partition exists from the switch on; interval partitions follow.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.utils import IntegrityError

from scheduling.rows.due_partitions import DuePartitions, align_down
from scheduling.rows.migration_operations import AUTOVACUUM
from scheduling.rows.partitions.catalog import (
    bound_clause,
    execute,
    fetch,
    literal,
    on_postgresql,
    quote,
    table_is_partitioned,
)

SWITCH_LOCK_TIMEOUT = "5s"  # the switch waits this long for the table, then gives up whole
INDEXES = """
    SELECT i.relname, pg_get_indexdef(x.indexrelid), x.indisunique, x.indisprimary,
        con.conname, EXISTS (
            SELECT 1 FROM pg_attribute a WHERE a.attrelid = x.indrelid
            AND a.attname = 'due_at' AND a.attnum = ANY(x.indkey))
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
    LEFT JOIN pg_constraint con ON con.conindid = x.indexrelid AND con.conrelid = x.indrelid
    WHERE x.indrelid = to_regclass(%s)
"""
FOREIGN_KEYS = """
    SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
    WHERE conrelid = to_regclass(%s) AND contype = 'f'
"""
INDEX_DEF = re.compile(r"CREATE (UNIQUE )?INDEX \S+ ON \S+ (USING .*)")


@dataclass
class Conversion:
    table: str
    bound: datetime | None = None  # the old rows' partition ends here
    rows: int = 0  # rows the old table held when switched
    dropped: list[str] = field(default_factory=list)  # unique indexes without due_at
    steps: list[tuple[str, float]] = field(default_factory=list)  # (step, seconds)


@dataclass(frozen=True)
class Target:
    """The table to convert, on its connection."""

    connection: Any
    table: str
    pk: str
    spec: DuePartitions

    def q(self, name: str) -> str:
        return quote(self.connection, name)

    @property
    def before(self) -> str:
        return f"{self.table}_before"

    @property
    def check_name(self) -> str:
        return f"{self.table}_before_bound"


def convert_table(target: Target, *, concurrently: bool, now: datetime) -> Conversion:
    """Steps 1 and 2 above; a table already partitioned (or not on PostgreSQL) is left as is."""
    done = Conversion(table=target.table)
    if not on_postgresql(target.connection) or table_is_partitioned(
        target.connection, target.table
    ):
        return done
    timed(done, "build unique index (id, due_at)", lambda: build_unique_index(target, concurrently))
    done.bound = timed(done, "add and validate CHECK", lambda: validated_bound(target, done, now))
    timed(done, "switch (one transaction)", lambda: switch(target, done))
    return done


def timed(done: Conversion, step: str, run: Any) -> Any:
    started = time.monotonic()
    value = run()
    done.steps.append((step, time.monotonic() - started))
    return value


def build_unique_index(target: Target, concurrently: bool) -> None:
    how, name = "CONCURRENTLY " if concurrently else "", target.table + "_id_due_at"
    # A concurrent build cut short (an earlier run stopped) leaves an invalid index behind.
    invalid = "SELECT NOT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)"
    if any(row[0] for row in fetch(target.connection, invalid, [name])):
        execute(target.connection, f"DROP INDEX {how}{target.q(name)}")
    execute(
        target.connection,
        f"CREATE UNIQUE INDEX {how}IF NOT EXISTS {target.q(name)}"
        f" ON {target.q(target.table)} ({target.q(target.pk)}, due_at)",
    )


def validated_bound(target: Target, done: Conversion, now: datetime, tries: int = 3) -> datetime:
    """Add and validate CHECK (due_at < bound). From the ADD on, a write due at or past the
    bound is refused until the switch, so the bound lies `premake` intervals past now: only a
    row due further ahead, written in those seconds, is refused. A row written past it
    between the count and the ADD fails the validation: the bound is read again."""
    table, check = target.q(target.table), target.q(target.check_name)
    for attempt in range(tries):
        ((latest, done.rows),) = fetch(
            target.connection, f"SELECT max(due_at), count(*) FROM {table}"
        )
        bound = old_rows_bound(latest, now, target.spec)
        with transaction.atomic(using=target.connection.alias):  # a catalog change: brief
            execute(target.connection, f"SET LOCAL lock_timeout = '{SWITCH_LOCK_TIMEOUT}'")
            execute(target.connection, f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {check}")
            execute(
                target.connection,
                f"ALTER TABLE {table} ADD CONSTRAINT {check}"
                f" CHECK (due_at < {literal(bound, '')}) NOT VALID",
            )
        try:
            with transaction.atomic(using=target.connection.alias):
                execute(target.connection, f"ALTER TABLE {table} VALIDATE CONSTRAINT {check}")
            return bound
        except IntegrityError:
            if attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


def old_rows_bound(latest: datetime | None, now: datetime, spec: DuePartitions) -> datetime:
    """The old table's partition ends after its latest row and `premake` intervals from now;
    an empty table's (a new model's, in its migration: no writer yet) after now."""
    ahead = now if latest is None else now + spec.premake * spec.interval
    return align_down(max(latest or ahead, ahead), spec.interval) + spec.interval


def switch(target: Target, done: Conversion) -> None:
    with transaction.atomic(using=target.connection.alias):
        execute(target.connection, f"SET LOCAL lock_timeout = '{SWITCH_LOCK_TIMEOUT}'")
        execute(target.connection, f"LOCK TABLE {target.q(target.table)} IN ACCESS EXCLUSIVE MODE")
        indexes = fetch(target.connection, INDEXES, [target.table])
        keys = fetch(target.connection, FOREIGN_KEYS, [target.table])
        next_id = take_sequence(target)
        rename_old(target, indexes, done)
        create_parent(target, next_id)
        copy_indexes(target, indexes, keys)
        attach_old(target, done.bound)


def take_sequence(target: Target) -> tuple[str | None, int]:
    """(the serial column's own sequence, or None for an identity column, whose sequence goes
    with it; the next id). Partitioned tables take no identity column before PostgreSQL 17:
    the parent's id gets a sequence default instead, which continues the old numbering."""
    conn, params = target.connection, [target.table, target.pk]
    ((sequence,),) = fetch(conn, "SELECT pg_get_serial_sequence(%s, %s)", params)
    if sequence is None:
        ((last,),) = fetch(conn, f"SELECT max({target.q(target.pk)}) FROM {target.q(target.table)}")
        return None, (last or 0) + 1
    ((next_id,),) = fetch(conn, "SELECT nextval(%s)", [sequence])
    ((identity,),) = fetch(
        conn,
        "SELECT attidentity FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = %s",
        params,
    )
    if not identity:
        return str(sequence), int(next_id)
    execute(
        conn,
        f"ALTER TABLE {target.q(target.table)} ALTER COLUMN {target.q(target.pk)} DROP IDENTITY",
    )
    return None, int(next_id)


def before_name(name: str) -> str:
    return f"{name[:55]}_before"


def kept(index: tuple[Any, ...], target: Target) -> bool:
    """An index the parent gets too: not a primary key, not ours, not unique without due_at."""
    name, _, unique, primary, _, has_due = index
    return not primary and name != f"{target.table}_id_due_at" and (has_due or not unique)


def rename_old(target: Target, indexes: list[tuple[Any, ...]], done: Conversion) -> None:
    """The old table and its indexes step aside for the parent's names; unique indexes without
    due_at are dropped (a partitioned table cannot hold one across its partitions)."""
    conn, before = target.connection, target.q(target.before)
    execute(conn, f"ALTER TABLE {target.q(target.table)} RENAME TO {before}")
    execute(
        conn,
        f"ALTER TABLE {before} ADD CONSTRAINT {target.q(target.before + '_id_due_at')}"
        f" UNIQUE USING INDEX {target.q(target.table + '_id_due_at')}",
    )
    for index in indexes:
        name, _, _, primary, constraint, _ = index
        if primary:
            new = target.q(target.before + "_pkey")
            execute(conn, f"ALTER TABLE {before} RENAME CONSTRAINT {target.q(constraint)} TO {new}")
        elif kept(index, target):
            execute(conn, f"ALTER INDEX {target.q(name)} RENAME TO {target.q(before_name(name))}")
        elif name != f"{target.table}_id_due_at":
            drop_unique(target, name, constraint)
            done.dropped.append(name)


def drop_unique(target: Target, name: str, constraint: str | None) -> None:
    if constraint:
        execute(
            target.connection,
            f"ALTER TABLE {target.q(target.before)} DROP CONSTRAINT {target.q(constraint)}",
        )
    else:
        execute(target.connection, f"DROP INDEX {target.q(name)}")


def create_parent(target: Target, sequence: tuple[str | None, int]) -> None:
    conn, table, pk = target.connection, target.q(target.table), target.q(target.pk)
    execute(
        conn,
        f"CREATE TABLE {table} (LIKE {target.q(target.before)} INCLUDING DEFAULTS"
        " INCLUDING CONSTRAINTS INCLUDING COMMENTS) PARTITION BY RANGE (due_at)",
    )
    execute(conn, f"ALTER TABLE {table} DROP CONSTRAINT {target.q(target.check_name)}")
    execute(
        conn,
        f"ALTER TABLE {table} ADD CONSTRAINT {target.q(target.table + '_pkey')}"
        f" PRIMARY KEY ({pk}, due_at)",
    )
    own, next_id = sequence
    name = own or f"{target.table}_{target.pk}_seq"
    if own is None:
        execute(conn, f"CREATE SEQUENCE {target.q(name)} START WITH {int(next_id)}")
    execute(conn, f"ALTER SEQUENCE {target.q(name)} OWNED BY {table}.{pk}")
    execute(conn, f"ALTER TABLE {table} ALTER COLUMN {pk} SET DEFAULT nextval('{name}')")


def copy_indexes(
    target: Target, indexes: list[tuple[Any, ...]], keys: list[tuple[Any, ...]]
) -> None:
    """The parent's indexes under the old names, ON ONLY the parent: attaching the old table
    attaches its matching indexes to them, with no build. Its foreign keys, likewise."""
    conn, table = target.connection, target.q(target.table)
    for index in indexes:
        if kept(index, target):
            match = INDEX_DEF.fullmatch(index[1])
            assert match is not None, index[1]
            unique = match[1] or ""
            execute(conn, f"CREATE {unique}INDEX {target.q(index[0])} ON ONLY {table} {match[2]}")
    for name, definition in keys:
        execute(conn, f"ALTER TABLE {table} ADD CONSTRAINT {target.q(name)} {definition}")


def attach_old(target: Target, bound: datetime | None) -> None:
    conn, table, before = target.connection, target.q(target.table), target.q(target.before)
    execute(conn, f"ALTER TABLE {table} ATTACH PARTITION {before} {bound_clause(None, bound)}")
    execute(conn, f"ALTER TABLE {before} DROP CONSTRAINT {target.q(target.check_name)}")
    default = target.q(target.table + "_default")
    execute(conn, f"CREATE TABLE {default} PARTITION OF {table} DEFAULT WITH ({autovacuum()})")


def autovacuum() -> str:
    return ", ".join(f"{name} = {value}" for name, value in AUTOVACUUM.items())
