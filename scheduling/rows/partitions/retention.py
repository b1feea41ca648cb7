"""Retention by partition: a partition wholly before the retention cutoff whose rows are ALL
purgeable (purge.py's own predicate) is detached and dropped, with no row-by-row DELETE.

One transaction a partition: the partition is locked against writes (SHARE) before its rows are
checked, so none can stop being purgeable between the check and the drop; then it is detached
and dropped. PostgreSQL refuses DETACH ... CONCURRENTLY while a DEFAULT partition exists, and
ours always does (no insert may fail), so the detach is the plain one: ACCESS EXCLUSIVE on the
parent, taken last and held only for the catalog changes (milliseconds once granted), under a
short lock_timeout: a busy table makes it give up, and the next hourly run tries again. History
entries of the dropped rows are left to purge.py's walk of orphaned entries.

Row by row, a keep rule costs index probes a row; a model that gives its set-based form
(recurring does) is checked with one statement a partition.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import OperationalError, transaction

from scheduling.rows.partitions.catalog import (
    Partition,
    execute,
    fetch,
    partitions_of,
    quote,
)
from scheduling.rows.states import Status
from scheduling.rows.tracing.models import CreationContext

LOCK_TIMEOUT = "2s"
SET_BASED_WORK_MEM = "256MB"
log = logging.getLogger(__name__)


@dataclass
class Dropped:
    partitions: list[str] = field(default_factory=list)
    rows: int = 0


def past(partition: Partition, cutoff: datetime) -> bool:
    """Every row it can hold was due before `cutoff` (the DEFAULT one never is)."""
    return not partition.default and partition.upper is not None and partition.upper <= cutoff


@dataclass(frozen=True)
class Rule:
    """What makes a row purgeable: SQL over the alias `t`, true for a row done past its
    retention, without (`done`) and with (`purgeable`) the model's keep rule; and the keep
    rule's set-based form (`kept_in_partition`: scheduling.extensions' `in_partition`)."""

    done: str
    purgeable: str
    kept_in_partition: str | None = None


def drop_done_partitions(
    connection: Any, table: str, rule: Rule, params: dict[str, Any], cutoff: datetime
) -> Dropped:
    dropped = Dropped()
    found = partitions_of(connection, table)
    for partition in found:
        if not past(partition, cutoff) or holds_pending(connection, partition):
            continue
        try:
            rows = drop_if_purgeable(
                connection, table, partition, rule, {**params, **bounds(partition, found)}
            )
        except OperationalError as exc:  # the lock_timeout: a busy table; the next run
            log.warning("partition %s not dropped this time: %s", partition.name, exc)
            continue
        if rows is not None:
            dropped.partitions.append(partition.name)
            dropped.rows += rows
    return dropped


def bounds(partition: Partition, found: list[Partition]) -> dict[str, datetime | None]:
    """The keep rule's parameters: where `partition` ends (`upper`) and where the partition
    right after it ends (`next_upper`; `upper` again when there is none)."""
    after = [p.upper for p in found if not p.default and p.lower == partition.upper]
    following = after[0] if after and after[0] is not None else partition.upper
    return {"upper": partition.upper, "next_upper": following}


def holds_pending(connection: Any, partition: Partition) -> bool:
    """A pending row is never purgeable: one probe of the claim's index (pending rows alone)
    passes over a partition still in use, which the full check scans (1.6 s for the 26 million
    rows a converted table's old partition held at 30 million)."""
    name = quote(connection, partition.name)
    sql = f"SELECT EXISTS (SELECT 1 FROM {name} WHERE status = %s)"
    ((pending,),) = fetch(connection, sql, [Status.PENDING.value])
    return bool(pending)


def drop_if_purgeable(
    connection: Any, table: str, partition: Partition, rule: Rule, params: dict[str, Any]
) -> int | None:
    """The partition's row count once it is dropped; None (nothing changed) if a row of it is
    not purgeable."""
    parent, name = quote(connection, table), quote(connection, partition.name)
    with transaction.atomic(using=connection.alias):
        execute(connection, f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        # Writers of its rows (a late handled mark) wait for this transaction; readers do not.
        execute(connection, f"LOCK TABLE {name} IN SHARE MODE")
        rows = all_purgeable(connection, partition, rule, params)
        if rows is None:
            return None  # a row in it is not done, or kept: left to the row-wise purge
        forget_contexts(connection, name, params)
        execute(connection, f"ALTER TABLE {parent} DETACH PARTITION {name}")
        execute(connection, f"DROP TABLE {name}")
    return rows


def all_purgeable(
    connection: Any, partition: Partition, rule: Rule, params: dict[str, Any]
) -> int | None:
    """How many rows the partition holds, if every one of them is purgeable; else None."""
    if rule.kept_in_partition is None:
        return all_match(connection, partition.name, rule.purgeable, params)
    rows = all_match(connection, partition.name, rule.done, params)
    if rows is None or not rows:
        return rows
    statement = rule.kept_in_partition.format(partition=quote(connection, partition.name))
    with whole_partition_plans(connection):
        ((kept,),) = fetch(connection, statement, params)
    return None if kept else rows


@contextmanager
def whole_partition_plans(connection: Any) -> Iterator[None]:
    """A transaction planned for statements over whole partitions (a keep rule's)."""
    with transaction.atomic(using=connection.alias):
        execute(connection, "SET LOCAL jit = off")
        # Its hash over a day's rows (millions) in memory, not spilled to disk.
        execute(connection, f"SET LOCAL work_mem = '{SET_BASED_WORK_MEM}'")
        # Whole partitions are joined by hashing, never by a nested loop of index probes a row:
        # the planner picks that loop when a partition's statistics predate its day's
        # deliveries (until autovacuum analyses it again), 4.1 s instead of 1.6 s for a day of
        # 2,010,000. A rule's lookups a row are subqueries, which this does not touch.
        execute(connection, "SET LOCAL enable_nestloop = off")
        yield


def all_match(connection: Any, name: str, condition: str, params: dict[str, Any]) -> int | None:
    """How many rows the partition holds, if every one of them meets `condition`; else None."""
    table = quote(connection, name)
    with transaction.atomic(using=connection.alias):
        execute(connection, "SET LOCAL jit = off")  # as in the sweep (queries.py)
        ((kept, rows),) = fetch(
            connection,  # EXISTS stops at the first row kept: a partition not ready costs little
            f"SELECT EXISTS (SELECT 1 FROM {table} AS t WHERE ({condition}) IS NOT TRUE),"
            f" (SELECT count(*) FROM {table})",
            params,
        )
    return None if kept else int(rows)


def forget_contexts(connection: Any, partition: str, params: dict[str, Any]) -> None:
    """The dropped rows' creation contexts (tracing, docs/tracing.md) go with them. A model
    never traced has none: one probe of the index, nothing deleted."""
    contexts, label = quote(connection, CreationContext._meta.db_table), params["label"]
    ((traced,),) = fetch(
        connection, f"SELECT EXISTS (SELECT 1 FROM {contexts} WHERE model = %s)", [label]
    )
    if traced:
        execute(
            connection,
            f"DELETE FROM {contexts} WHERE model = %s AND row_id IN (SELECT id FROM {partition})",
            [label],
        )
