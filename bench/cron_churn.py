"""cron_scale's day of churn and retention, in bulk SQL.

CHURN of the loaded schedules (one in every N // CHURN, spread over the table as a day's fires
are) are delivered as the sweep does, on two consecutive days: each pending occurrence becomes
delivered (the sweep's own UPDATE) and its successor, a day later, is inserted, in one
statement a batch. Two days because the purge keeps each schedule's newest fire
(scheduling/recurring/purge.py): the first day's rows are purgeable, the second's are those
newest fires. A real day of N daily schedules is N such deliveries; CHURN is a share of it.

The two days lie 16 days ahead (DAYS_AHEAD), past every loaded row, so that on the partitioned
layout they are day partitions of their own, as every day is once a converted table's old rows
are gone; the purge then runs with its clock (`now`) set to when the first day is past
retention. Their pending occurrences are first moved to the first day (a setup, then VACUUM),
as if they had been due then all along. The purge is the project's: a partition dropped on the
partitioned table, then (on either layout) the row-wise walk, under a time budget, the whole
walk extrapolated from its rate when the budget cuts it.
"""

import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection

from bench.common import vacuum
from bench.cron_layout import CHURN_DAYS_AHEAD, is_partitioned, partitions
from bench.cron_load import columns, occurrence_columns, progress
from bench.cron_report import note, note_against, phase
from scheduling.recurring.models import ScheduledOccurrence
from scheduling.rows.conf import scheduling_settings
from scheduling.rows.purge import PurgeResult, cutoffs, purge_model

BATCH = 50_000  # occurrences a statement
TABLES = ("recurring_schedule", "scheduled_occurrence")
RELATIONS = "SELECT relid FROM pg_partition_tree(%s) UNION SELECT %s::regclass"
# Past the loaded rows and past the converted table's old partition, which takes the next
# `premake` (14) days' rows too (scheduling/rows/partitions/convert.py): day partitions of their own.
DAYS_AHEAD = CHURN_DAYS_AHEAD
PENDING_INDEX = "%%(due_at, id) WHERE%%pending%%"  # the claim's index, by its definition

DELIVER = """
WITH done AS (
    UPDATE scheduled_occurrence o SET status = 'delivered', delivered_at = o.due_at,
        attempts = o.attempts + 1, last_error = '', updated_at = o.due_at
    WHERE o.status = 'pending' AND NOT o.manual AND NOT o.catch_up
        AND o.schedule_id BETWEEN %(first)s AND %(last)s AND mod(o.schedule_id, %(every)s) = 0
        AND o.due_at >= %(day)s AND o.due_at < %(day)s + interval '1 day'
    RETURNING o.schedule_id AS id, o.due_at
)
INSERT INTO scheduled_occurrence ({names}) SELECT {values} FROM done s
"""
MOVE = """
UPDATE scheduled_occurrence o SET due_at = %(day)s + (mod(o.schedule_id, 86399) + 1)
    * interval '1 second'
WHERE o.status = 'pending' AND NOT o.manual AND NOT o.catch_up
    AND o.schedule_id BETWEEN %(first)s AND %(last)s AND mod(o.schedule_id, %(every)s) = 0
"""


@dataclass(frozen=True)
class Churn:
    rows: int  # deliveries a day
    every: int  # one schedule in `every` is churned
    last: int  # the last loaded schedule's id
    purge_budget: float  # seconds


def churn_day() -> datetime:
    """Midnight UTC, DAYS_AHEAD days from today."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT date_trunc('day', now()) + %s * interval '1 day'", [DAYS_AHEAD])
        return cursor.fetchone()[0]


def in_batches(statement: str, churn: Churn, what: str, **params: datetime) -> int:
    """`statement` over the churned schedules, BATCH of them a statement; rows changed."""
    changed, started, span = 0, time.perf_counter(), BATCH * churn.every
    for first in range(1, churn.last + 1, span):
        bounds = {"first": first, "last": min(churn.last, first + span - 1), "every": churn.every}
        with connection.cursor() as cursor:
            cursor.execute(statement, {**params, **bounds})
            changed += cursor.rowcount
        if (first // span) % 10 == 9 or first + span > churn.last:
            progress(what, changed, churn.rows, started)
    return changed


def deliver_day(churn: Churn, day: datetime, label: str) -> float:
    names, values = columns(ScheduledOccurrence, occurrence_columns("s.due_at + interval '1 day'"))
    started = time.perf_counter()
    statement = DELIVER.format(names=names, values=values)
    delivered = in_batches(statement, churn, f"{label}: delivered", day=day)
    seconds = time.perf_counter() - started
    note(f"churn, {label}: deliveries with successor", delivered, "rows")
    note(f"churn, {label}: rate", delivered / seconds if seconds else 0.0, "rows/s")
    return seconds


def run_churn(churn: Churn, schedules: int) -> None:
    day = churn_day()
    with phase(f"churn setup: {churn.rows:,} pending occurrences moved to {day:%Y-%m-%d}"):
        in_batches(MOVE, churn, "moved", day=day)
        vacuum("scheduled_occurrence")
    before = pending_index_bytes()
    with phase("churn: two days of deliveries"):
        seconds = deliver_day(churn, day, "day 1")
        seconds += deliver_day(churn, day + timedelta(days=1), "day 2")
    note(
        "churn: seconds a real day would take (x N / CHURN)",
        seconds / 2 * schedules / churn.rows,
        "s",
    )
    after = pending_index_bytes()
    with phase(f"purge of {day:%Y-%m-%d}'s done rows"):
        purge(churn, day)
    note("claim's index (pending, due_at id), before churn", before / 2**20, "MiB")
    note("claim's index (pending, due_at id), after churn", after / 2**20, "MiB")
    note("claim's index (pending, due_at id), after purge", pending_index_bytes() / 2**20, "MiB")
    disk_sizes()


def purge(churn: Churn, day: datetime) -> None:
    """The first day's done rows purged, by the clock of the day they pass retention."""
    now = day + timedelta(days=scheduling_settings().keep_done_days + 1)
    if is_partitioned():
        started = time.perf_counter()
        dropped = partitions().drop_purgeable(ScheduledOccurrence, cutoffs(now))
        note("purge: partitions dropped", len(dropped.partitions), "partitions")
        note("purge: rows in them", dropped.rows, "rows")
        seconds = time.perf_counter() - started
        note_against(
            "purge: seconds to drop them",
            seconds,
            "s",
            anchor=5.0,
            anchor_label="goal",
            lower_is_better=True,
        )
        # Every partition wholly before the cutoff: the churned day's and the empty ones
        # between the converted table's old partition and it.
        print(f"    dropped: {', '.join(dropped.partitions) or 'none'}")
    started = time.perf_counter()
    deadline = time.monotonic() + churn.purge_budget
    result = purge_model(ScheduledOccurrence, now=now, deadline=deadline)
    seconds = time.perf_counter() - started
    note("purge, row-wise walk: rows deleted", result.deleted, "rows")
    note("purge, row-wise walk: rows examined", result.examined, "rows")
    note("purge, row-wise walk: seconds", seconds, "s")
    note("purge: that day's rows left", rows_of_day(day), "rows")
    if result.resume_after is not None:
        print(f"    the time budget ({churn.purge_budget:g} s) cut the walk: extrapolated below")
        note("purge, row-wise walk: whole, extrapolated", extrapolated(result, seconds), "s")


def extrapolated(result: PurgeResult, seconds: float) -> float:
    """The whole walk's seconds at the rate of its first part: rows examined a second, over
    every row of the table (the churned rows are spread evenly over the walk's order)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM scheduled_occurrence")
        rows = int(cursor.fetchone()[0])
    return seconds * rows / max(result.examined, 1)


def rows_of_day(day: datetime) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM scheduled_occurrence"
            " WHERE due_at >= %s AND due_at < %s::timestamptz + interval '1 day'",
            [day, day],
        )
        return int(cursor.fetchone()[0])


def pending_index_bytes() -> int:
    """The claim's partial index on (due_at, id), summed over the partitions if any."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0) FROM pg_index i"
            f" WHERE i.indrelid IN ({RELATIONS})"
            f" AND pg_get_indexdef(i.indexrelid) LIKE '{PENDING_INDEX}'",
            ["scheduled_occurrence", "scheduled_occurrence"],
        )
        return int(cursor.fetchone()[0])


def disk_sizes() -> None:
    """Rows, heap and indexes of both tables (over their partitions), in MiB."""
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(
                "SELECT coalesce(sum(pg_table_size(relid)), 0),"
                f" coalesce(sum(pg_indexes_size(relid)), 0) FROM ({RELATIONS}) AS tree",
                [table, table],
            )
            heap, indexes = (int(size) for size in cursor.fetchone())
            cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")
            note(f"{table} rows", cursor.fetchone()[0], "rows")
            note(f"{table} heap", heap / 2**20, "MiB")
            note(f"{table} indexes", indexes / 2**20, "MiB")
