"""scale: the idle sweep and one claimed batch at a small and a huge pending backlog.

"Idle" means nothing is due: the sweep's cost then is the lock plus one index probe, which the
partial index on pending due_at keeps flat however many rows wait in the future.
"""

import statistics
import time

from bench.common import broker, make_notification_rows, record, sql, vacuum
from scheduling.delivery.publishing import shared_publisher
from scheduling.delivery.sweep.batch import sweep_batch
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.conf import scheduling_settings
from trainings.models import ScheduledTrainingNotification

MODEL = ScheduledTrainingNotification
REPEATS = 50


def idle_sweep_ms() -> float:
    timings = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        result = sweep(MODEL)
        timings.append((time.perf_counter() - started) * 1000)
        assert result.delivered == 0
    return statistics.median(timings)


def claimed_batch_ms() -> float:
    """Make one batch of rows due, then time the transaction that claims, publishes and marks it."""
    conf = scheduling_settings()
    sql(
        "UPDATE scheduled_training_notification SET due_at = now() - interval '1 second'"
        " WHERE id IN (SELECT id FROM scheduled_training_notification ORDER BY id DESC LIMIT %s)",
        [conf.batch_size],
    )
    vacuum("scheduled_training_notification")
    started = time.perf_counter()
    batch = sweep_batch(
        MODEL, now=None, publisher=shared_publisher(conf.publish_timeout), conf=conf
    )
    elapsed = (time.perf_counter() - started) * 1000
    assert batch.delivered == conf.batch_size, batch
    broker().flushdb()
    return elapsed


def measure_at(rows: int, teams: int) -> tuple[float, float]:
    make_notification_rows(teams=teams, rows_per_team=rows // teams, due_in="1 day")
    idle = idle_sweep_ms()
    batch = claimed_batch_ms()
    record("scale", f"idle sweep at {rows:,} pending rows", idle, "ms")
    record("scale", f"one claimed batch at {rows:,} pending rows", batch, "ms")
    return idle, batch


def run_scale(small: int, large: int) -> None:
    print(f"scale: idle sweep and one batch at {small:,} and {large:,} pending rows")
    idle_small, batch_small = measure_at(small, teams=1)
    idle_large, batch_large = measure_at(large, teams=100)
    record("scale", "idle sweep: large / small", idle_large / idle_small, "x")
    record("scale", "claimed batch: large / small", batch_large / batch_small, "x")
