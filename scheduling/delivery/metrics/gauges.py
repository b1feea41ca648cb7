"""Gauges read from PostgreSQL when asked (the scrape, the dashboard, the health view), over the
partial indexes: backlog, lateness, failed rows, rows awaiting handling, rows in flight."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper

from scheduling.rows.models import ScheduledEvent
from scheduling.rows.states import Status

# Row counts stop here, so a scrape costs the same on a large table as on a small one (counting
# index entries takes time in proportion to their number): a gauge at the cap means "at least
# this many". Pending rows past the cap are the planner's estimate.
COUNT_CAP = 10_000


@dataclass(frozen=True)
class ModelSnapshot:
    """Rows of one model now. Counts stop at COUNT_CAP (a count at the cap: at least that),
    but `pending`, which past the cap is PostgreSQL's estimate (from ANALYZE statistics)."""

    pending: int
    due_now: int  # pending rows already due
    # How late the most late due pending row is (from its creation if created already due;
    # gauges.LATE_SINCE); 0.0 when none is due.
    oldest_due_seconds: float
    failed_rows: int
    awaiting_handling: int  # published, not handled yet (0 for models without a handler)
    in_flight: int = 0  # at-most-once rows whose effect began and has not reported back
    stuck_in_flight: int = 0  # of those, in flight for longer than the handling timeout


# How late the most late of the LATE_SAMPLE oldest due rows is, each counted from its due time,
# or from its creation if it was created already due (a keyed job's instant of last year is not
# a year late). Rows past the sample are due later still: they are missed only when every row
# of the sample was created after them. The sample keeps /healthz's probe to one index range.
LATE_SAMPLE = 1000
LATE_SINCE = "GREATEST(due_at, created_at)"
OLDEST_DUE_SQL = f"""(SELECT EXTRACT(EPOCH FROM statement_timestamp() - min({LATE_SINCE}))
     FROM (SELECT due_at, created_at FROM {{table}} WHERE status = 'pending'
     AND due_at <= statement_timestamp() ORDER BY due_at LIMIT {LATE_SAMPLE}) AS oldest)"""


def late_since(row: ScheduledEvent) -> datetime:
    """When a row began to be late, as LATE_SINCE says: its due time, or its creation if it was
    created already due. A row not saved yet has no creation: its due time."""
    created = row.__dict__.get("created_at")  # never a query for a deferred column
    return row.due_at if created is None else max(row.due_at, created)


GAUGES_SQL = """
SELECT
  (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE status = 'pending'
     ORDER BY due_at LIMIT %(cap)s) AS pending),
  (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE status = 'pending'
     AND due_at <= statement_timestamp() ORDER BY due_at LIMIT %(cap)s) AS due),
  {oldest},
  (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE status = 'failed' LIMIT %(cap)s) AS failed),
  {awaiting},
  {in_flight}
"""
AWAITING_SQL = """(SELECT count(*) FROM (SELECT 1 FROM {table} WHERE status = 'delivered'
     AND handled_at IS NULL AND effect_started_at IS NULL ORDER BY delivered_at LIMIT %(cap)s)
     AS awaiting)"""
IN_FLIGHT_SQL = """(SELECT count(*) FROM (SELECT 1 FROM {table} WHERE status = 'delivered'
     AND handled_at IS NULL AND effect_started_at IS NOT NULL ORDER BY delivered_at
     LIMIT %(cap)s) AS in_flight),
  (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE status = 'delivered'
     AND handled_at IS NULL AND effect_started_at < statement_timestamp() - %(timeout)s
     ORDER BY delivered_at LIMIT %(cap)s) AS stuck)"""


def snapshot(model: type[ScheduledEvent]) -> ModelSnapshot:
    """One query. ORDER BY on the indexed column keeps each count on its partial index (pending
    due_at, awaiting handling) whatever the statistics say."""
    connection = _reading(model)
    if connection.vendor != "postgresql":
        return _snapshot_orm(model)
    table = connection.ops.quote_name(model._meta.db_table)
    awaiting = AWAITING_SQL.format(table=table) if model.get_awaits_handling() else "0"
    in_flight = IN_FLIGHT_SQL.format(table=table) if model.at_most_once else "0, 0"
    oldest = OLDEST_DUE_SQL.format(table=table)
    sql = GAUGES_SQL.format(table=table, oldest=oldest, awaiting=awaiting, in_flight=in_flight)
    params: dict[str, Any] = {
        "cap": COUNT_CAP,
        "timeout": timedelta(seconds=model.get_handling_timeout()),
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        pending, due, oldest, failed, *handling = cursor.fetchone()
        if pending >= COUNT_CAP:
            pending = max(_estimated_rows(cursor, table, "status = 'pending'"), COUNT_CAP)
    return ModelSnapshot(pending, due, max(float(oldest or 0), 0.0), failed, *handling)


def due_rows(model: type[ScheduledEvent], counted: int) -> int:
    """Pending rows already due: `counted` (a snapshot's `due_now`) below COUNT_CAP, else
    PostgreSQL's estimate (at least the cap), so a backlog of millions reads as such."""
    connection = _reading(model)
    if counted < COUNT_CAP or connection.vendor != "postgresql":
        return counted
    table = connection.ops.quote_name(model._meta.db_table)
    due = "status = 'pending' AND due_at <= statement_timestamp()"
    with connection.cursor() as cursor:
        return max(_estimated_rows(cursor, table, due), COUNT_CAP)


def _reading(model: type[ScheduledEvent]) -> BaseDatabaseWrapper:
    """Where the model's reads go: a replica while a safe request is served (the dashboard),
    else its primary (scheduling.rows.replicas)."""
    return connections[router.db_for_read(model)]


def _estimated_rows(cursor: Any, table: str, where: str) -> int:
    cursor.execute(f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {table} WHERE {where}")
    plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return int(plan[0]["Plan"]["Plan Rows"])


def _snapshot_orm(model: type[ScheduledEvent]) -> ModelSnapshot:
    """The embedded mode (SQLite): the same figures, without the index tricks."""
    rows = model.objects.all()
    due = rows.due().order_by("due_at")
    sample = due.values_list("due_at", "created_at")[:LATE_SAMPLE]
    oldest = min((max(pair) for pair in sample), default=None)
    awaiting = rows.awaiting_handling() if model.get_awaits_handling() else rows.none()
    return ModelSnapshot(
        pending=rows.pending()[:COUNT_CAP].count(),
        due_now=due[:COUNT_CAP].count(),
        oldest_due_seconds=(datetime.now(UTC) - oldest).total_seconds() if oldest else 0.0,
        failed_rows=rows.filter(status=Status.FAILED)[:COUNT_CAP].count(),
        awaiting_handling=awaiting[:COUNT_CAP].count(),
        in_flight=rows.in_flight()[:COUNT_CAP].count(),
        stuck_in_flight=rows.stuck_in_flight()[:COUNT_CAP].count(),
    )


def oldest_due_seconds(model: type[ScheduledEvent]) -> float:
    """How late the oldest due pending row is, by the database's clock (0.0: none due)."""
    connection = _reading(model)
    if connection.vendor != "postgresql":
        return _snapshot_orm(model).oldest_due_seconds
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {OLDEST_DUE_SQL.format(table=table)}")
        row = cursor.fetchone()
    return max(float(row[0]), 0.0) if row and row[0] is not None else 0.0
