"""The model-level entry points: each takes a model and finds its table and its connection."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError

from scheduling.rows.databases import connection_of
from scheduling.rows.due_partitions import DuePartitions, as_interval, partitioning_of
from scheduling.rows.extensions import extensions
from scheduling.rows.partitions.catalog import Partition, partitions_of, table_is_partitioned
from scheduling.rows.partitions.convert import Conversion, Target, convert_table
from scheduling.rows.partitions.maintain import Maintenance, maintain_table
from scheduling.rows.partitions.retention import Dropped, Rule, drop_done_partitions
from scheduling.rows.retention import Cutoffs, cutoff_params, done_condition

log = logging.getLogger(__name__)


def connection_for(model: Any) -> Any:
    """The connection a model's table lives on (the routers' write database for it)."""
    return connection_of(model)


def clock(conn: Any) -> datetime:
    with conn.cursor() as cursor:
        cursor.execute("SELECT statement_timestamp()")
        now: datetime = cursor.fetchone()[0]
    return now


def is_partitioned(model: Any) -> bool:
    """The model's table is partitioned in its database (False on SQLite)."""
    return table_is_partitioned(connection_for(model), model._meta.db_table)


def convert(
    model: Any, interval: timedelta | str | None = None, *, concurrently: bool = True
) -> Conversion:
    """Partition the model's table on due_at, its rows kept (scheduling.rows.partitions.convert),
    then premake its partitions. `interval` defaults to the model's declared one, else a day.
    Not in a transaction when `concurrently` (CREATE INDEX CONCURRENTLY refuses one)."""
    spec = spec_for(model, interval)
    conn = connection_for(model)
    target = Target(conn, model._meta.db_table, model._meta.pk.column, spec)
    done = convert_table(target, concurrently=concurrently, now=now_on(conn))
    if done.bound is not None:
        maintain(model, spec=spec)
    return done


def now_on(conn: Any) -> datetime:
    from django.utils import timezone

    return clock(conn) if conn.vendor == "postgresql" else timezone.now()


def spec_for(model: Any, interval: timedelta | str | None) -> DuePartitions:
    declared = partitioning_of(model)
    if interval is None:
        return declared or DuePartitions()
    premake = declared.premake if declared is not None else DuePartitions().premake
    return DuePartitions(interval=as_interval(interval), premake=premake)


def maintain(model: Any, *, spec: DuePartitions | None = None) -> Maintenance:
    """Keep the model's `premake` partitions ahead of now (no-op unless partitioned)."""
    conn = connection_for(model)
    if not is_partitioned(model):
        return Maintenance(table=model._meta.db_table)
    declared = spec or partitioning_of(model)
    return maintain_table(conn, model._meta.db_table, declared, clock(conn))


def maintain_all(models: list[Any]) -> list[Maintenance]:
    """maintain() for each partitioned model; one that cannot get its locks is logged and
    tried again at the next run."""
    done = []
    for model in models:
        try:
            done.append(maintain(model))
        except DatabaseError as exc:
            log.warning("partitions of %s not maintained: %s", model._meta.label, exc)
    return done


def partitions(model: Any) -> list[Partition]:
    """The model's partitions, bounds, estimated rows and bytes; [] unless partitioned."""
    if not is_partitioned(model):
        return []
    return partitions_of(connection_for(model), model._meta.db_table)


def drop_purgeable(model: Any, limits: Cutoffs) -> Dropped:
    """Partitions wholly before the retention cutoff whose rows are all purgeable, dropped
    Called by the purge before its row-by-row walk."""
    if not is_partitioned(model):
        return Dropped()
    cutoff = max(limits.done_before, limits.failed_before)
    conn = connection_for(model)
    in_partition = extensions.kept_in_partition.get(model._meta.label)
    rule = Rule(
        done=done_condition(model, kept_too=False),
        purgeable=done_condition(model),
        kept_in_partition=in_partition(model) if in_partition is not None else None,
    )
    params = {**cutoff_params(limits, model), "label": model._meta.label_lower}
    return drop_done_partitions(conn, model._meta.db_table, rule, params, cutoff)
