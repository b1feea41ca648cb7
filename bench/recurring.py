"""recurring: how many every-minute schedules one sweeper keeps up with.

N schedules fire at the same minute (the worst case: cron `* * * * *` for all of them). We
time one sweep that publishes every occurrence and inserts each schedule's next one in the
same transaction, then check that each schedule has exactly one pending occurrence, a minute
later. Run: `python -m bench.recurring [--task] [N ...]` (default 10000 100000); the target
is a queue (plain JSON), or with --task a Celery task (a full task message each).

It uses its own database (scheduling_bench_recurring) and a Redis pair claimed the way test
runs claim theirs, so it never touches development data or another run.
"""

import os
import sys
import time
from datetime import datetime

BENCH_DB = "scheduling_bench_recurring"
QUEUE = "bench-recurring"
TASK = "bench.recurring_noop"  # never consumed: the bench counts what reaches the broker


def configure() -> None:
    os.environ.setdefault("DATABASE_URL", f"postgres://postgres@127.0.0.1:5432/{BENCH_DB}")
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"  # claims a free Redis pair
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # Nobody consumes the bench's queue: it counts what reaches the broker.
    os.environ.setdefault("SCHEDULING_QUEUE_TARGET_MAX_BACKLOG", "10000000")


def schedule_columns(*, task: bool, jitter: int = 0) -> tuple[str, str]:
    """recurring_schedule's columns and values for every-minute schedules."""
    from bench.cron_load import columns, literal
    from scheduling.recurring.models import RecurringSchedule

    return columns(
        RecurringSchedule,
        {
            "name": "'bench-' || g",
            "cron": "'* * * * *'",
            "timezone": "'Europe/Paris'",
            "task": literal(TASK if task else ""),
            "queue": literal("" if task else QUEUE),
            "payload_template": '\'{"day": "${todaysDate}"}\'::jsonb',
            "enabled": "true",
            "misfire_policy": "'fire_once'",
            "starts_at": "now() - interval '1 day'",
            "jitter": str(jitter),
            "version": "1",
            "created_at": "now()",
            "updated_at": "now()",
        },
    )


def make_schedules(count: int, *, task: bool, jitter: int = 0) -> datetime:
    """`count` every-minute schedules (with `jitter` seconds), each with its occurrence due at
    the start of the current minute (SQL, fast); returns that minute."""
    from bench.common import sql, vacuum
    from scheduling.rows.clock import database_now

    minute = database_now().replace(second=0, microsecond=0)

    sql("TRUNCATE scheduled_occurrence, recurring_schedule RESTART IDENTITY")
    names, values = schedule_columns(task=task, jitter=jitter)
    # Every other NOT NULL column takes the model's default (bench/cron_load.py).
    sql(
        f"INSERT INTO recurring_schedule ({names}) SELECT {values} FROM generate_series(1, %s) g",
        [count],
    )
    sql(
        "INSERT INTO scheduled_occurrence (schedule_id, schedule_version, manual, missed_run,"
        " due_at, status, version, attempts, cancel_reason, last_error, created_at, updated_at)"
        " SELECT id, 1, false, 0, %s, 'pending', 1, 0, '', '', now(), now()"
        " FROM recurring_schedule",
        [minute],
    )
    vacuum("recurring_schedule", "scheduled_occurrence")
    return minute


def run(count: int, *, task: bool) -> None:
    from bench.common import broker, timed
    from scheduling.delivery.publishing.targets import task_queue
    from scheduling.delivery.sweep.run import sweep
    from scheduling.recurring.models import ScheduledOccurrence

    queue = task_queue(TASK) if task else QUEUE
    minute = make_schedules(count, task=task)
    broker().delete(queue)
    cpu_before = time.process_time()
    with timed() as elapsed:
        # The claim's cutoff is that minute, so successors (a minute later) are never swept
        # here, however long the run takes.
        result = sweep(ScheduledOccurrence, now=minute, time_budget=3600)
    cpu = time.process_time() - cpu_before
    assert result.delivered == count, result
    assert broker().llen(queue) == count
    pending = ScheduledOccurrence.objects.filter(status="pending")
    assert pending.values("schedule_id").distinct().count() == count
    assert pending.count() == count, "one pending occurrence per schedule"
    rate = count / elapsed[0]
    target = "task" if task else "queue"
    print(f"  {count:>9,} {target} schedules due at once: {rate:>8,.0f} occurrences/s published,")
    print(
        f"  {'':>9}  each with its successor inserted; the last after {elapsed[0]:.2f} s; "
        "one sweeper keeps up with"
    )
    print(f"  {'':>9}  {rate * 60:,.0f} every-minute schedules spread over the minute;")
    print(f"  {'':>9}  the sweeping process's CPU: {cpu / count * 1e6:.0f} µs an occurrence")


def main(argv: list[str]) -> None:
    configure()
    from bench.database import prepare_database

    prepare_database()
    from tests.settings import release_redis_pair

    try:
        task = "--task" in argv
        for count in [int(arg) for arg in argv if arg != "--task"] or [10_000, 100_000]:
            started = time.perf_counter()
            run(count, task=task)
            print(f"  ({count:,} schedules: {time.perf_counter() - started:.1f} s in all)")
    finally:
        release_redis_pair()


if __name__ == "__main__":
    main(sys.argv[1:])
