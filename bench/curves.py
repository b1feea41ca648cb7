"""curves: how the sweep's cost grows with the table and the batch, for docs/benchmarks.png.

At each table size (10k, 100k, 1M, 10M pending rows, laid out as the scale scenario lays
them): a backlog of due rows is drained by one sweep at each batch size (events/s), then rows
fall due at a steady rate for a while and a one-second tick sweeps them, as beat does
(lateness: the database's delivered_at minus due_at).
"""

import time

from django.db import connection
from django.test.utils import override_settings

from bench.common import broker, make_notification_rows, record, sql, vacuum
from scheduling.delivery.sweep.run import sweep
from trainings.models import ScheduledTrainingNotification

MODEL = ScheduledTrainingNotification
TABLE = "scheduled_training_notification"
BATCHES = (100, 300, 1000, 3000)
TICK = 1.0  # beat's interval for the sweep
LATENESS_SECONDS = 10
LEAD = 2.0  # seconds before the first row falls due


def make_due(count: int, due_in: str, spread: str) -> None:
    """Reset what earlier rounds delivered, then make the `count` newest rows due at
    now + due_in + i * spread."""
    sql(
        f"UPDATE {TABLE} SET status = 'pending', delivered_at = NULL,"
        " due_at = now() + interval '1 day' WHERE status <> 'pending'"
    )
    sql(
        f"UPDATE {TABLE} n SET due_at = now() + %s::interval + s.rank * %s::interval"
        f" FROM (SELECT id, row_number() OVER (ORDER BY id DESC) AS rank FROM {TABLE}"
        "  ORDER BY id DESC LIMIT %s) s WHERE n.id = s.id",
        [due_in, spread, count],
    )
    vacuum(TABLE)
    broker().flushdb()


def drain_rate(backlog: int, batch: int) -> float:
    make_due(backlog, "-1 minute", "1 microsecond")
    with override_settings(SCHEDULING_BATCH_SIZE=batch):
        started = time.perf_counter()
        result = sweep(MODEL, time_budget=600)
        elapsed = time.perf_counter() - started
    assert result.delivered == backlog, result
    return backlog / elapsed


def lateness(rate: int) -> tuple[float, float]:
    """p50 and p99 of delivered_at - due_at with `rate` rows a second falling due, swept by
    a tick each second (no hold), as beat and a worker sweep them."""
    count = rate * LATENESS_SECONDS
    make_due(count, f"{LEAD} seconds", f"{1_000_000 // rate} microseconds")
    next_tick = time.monotonic()
    deadline = next_tick + LEAD + LATENESS_SECONDS + 3 * TICK
    while time.monotonic() < deadline:
        sweep(MODEL, time_budget=TICK)
        next_tick += TICK
        time.sleep(max(0.0, next_tick - time.monotonic()))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*),"
            " percentile_disc(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM delivered_at - due_at)),"
            " percentile_disc(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM delivered_at - due_at))"
            f" FROM {TABLE} WHERE status = 'delivered'"
        )
        delivered, p50, p99 = cursor.fetchone()
    assert delivered == count, (delivered, count)
    return float(p50), float(p99)


def run_curves(sizes: list[int], backlog: int, rate: int) -> None:
    print(
        f"curves: table sizes {sizes}; drains of {backlog:,} (at most half the table)"
        f" at batch sizes {BATCHES}"
    )
    for rows in sizes:
        teams = max(1, rows // 100_000)
        make_notification_rows(teams=teams, rows_per_team=rows // teams, due_in="1 day")
        for batch in BATCHES:
            rate_at = drain_rate(min(backlog, rows // 2), batch)
            record(
                "curves",
                f"drain at {rows:,} rows, batch {batch:,}",
                rate_at,
                "events/s",
                rows=rows,
                batch=batch,
            )
        steady = min(rate, rows // (2 * LATENESS_SECONDS))
        p50, p99 = lateness(steady)
        record("curves", f"lateness p50 at {rows:,} rows, {steady:,}/s", p50, "s", rows=rows)
        record("curves", f"lateness p99 at {rows:,} rows, {steady:,}/s", p99, "s", rows=rows)
    broker().flushdb()
