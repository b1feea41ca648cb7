"""Keep `premake` interval partitions ahead of now.

Each new partition is made as a standalone table, the rows the DEFAULT partition holds for its
range moved into it, then attached, in one short transaction: ATTACH takes SHARE UPDATE
EXCLUSIVE on the parent (reads, writes and sweeps go on) and ACCESS EXCLUSIVE on the DEFAULT
partition while it checks that none of its rows belong to the new range (we just moved them).
`lock_timeout` bounds the wait: a busy table makes the run give up, and the next one tries again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from scheduling.rows.due_partitions import DuePartitions, align_down, partition_name
from scheduling.rows.partitions.catalog import (
    Partition,
    bound_clause,
    execute,
    literal,
    partitions_of,
    quote,
)
from scheduling.rows.partitions.convert import autovacuum

LOCK_TIMEOUT = "2s"


@dataclass
class Maintenance:
    table: str
    created: list[str] = field(default_factory=list)
    moved: int = 0  # rows moved out of the DEFAULT partition into the new ones


def interval_of(found: list[Partition], declared: DuePartitions | None) -> timedelta:
    """The declared interval; for a table converted by command, its newest partition's width."""
    if declared is not None:
        return declared.interval
    for partition in reversed(found):
        if partition.lower is not None and partition.upper is not None:
            return partition.upper - partition.lower
    return timedelta(days=1)


def wanted(found: list[Partition], interval: timedelta, premake: int, now: datetime) -> list:
    """The [lower, upper) ranges to create: from the end of the last bounded partition (or the
    current interval) to `premake` intervals after the current one."""
    ends = [p.upper for p in found if not p.default and p.upper is not None]
    start = max([*ends, align_down(now, interval)])
    until = align_down(now, interval) + premake * interval
    ranges = []
    while start <= until:
        ranges.append((start, start + interval))
        start += interval
    return ranges


def maintain_table(
    connection: Any, table: str, declared: DuePartitions | None, now: datetime
) -> Maintenance:
    done = Maintenance(table=table)
    found = partitions_of(connection, table)
    if not found:
        return done
    interval = interval_of(found, declared)
    premake = declared.premake if declared is not None else DuePartitions().premake
    for lower, upper in wanted(found, interval, premake, now):
        name = partition_name(table, lower, interval)
        done.moved += add_partition(connection, table, name, lower, upper)
        done.created.append(name)
    return done


def add_partition(connection: Any, table: str, name: str, lower: datetime, upper: datetime) -> int:
    """Create, fill from the DEFAULT partition, attach: one transaction. Rows moved."""
    q = quote(connection, name)
    parent, default = quote(connection, table), quote(connection, f"{table}_default")
    check = quote(connection, f"{name}_bound")
    within = f"due_at >= {literal(lower, '')} AND due_at < {literal(upper, '')}"
    with transaction.atomic(using=connection.alias):
        execute(connection, f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        # The lock ATTACH takes anyway, taken first: no row for the new range can reach the
        # DEFAULT partition between the move and the attach (which would then refuse).
        execute(connection, f"LOCK TABLE {default} IN ACCESS EXCLUSIVE MODE")
        execute(
            connection,
            f"CREATE TABLE {q} (LIKE {parent} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
            f" WITH ({autovacuum()})",
        )
        # The CHECK lets ATTACH skip its scan of the new table.
        execute(connection, f"ALTER TABLE {q} ADD CONSTRAINT {check} CHECK ({within})")
        moved = execute(
            connection,
            f"WITH moved AS (DELETE FROM {default} WHERE {within} RETURNING *)"
            f" INSERT INTO {q} SELECT * FROM moved",
        )
        execute(
            connection, f"ALTER TABLE {parent} ATTACH PARTITION {q} {bound_clause(lower, upper)}"
        )
        execute(connection, f"ALTER TABLE {q} DROP CONSTRAINT {check}")
    return moved
