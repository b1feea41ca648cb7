"""cron_scale's table layouts: the plain `scheduled_occurrence`, or the same converted to
partitions by day with `scheduling.rows.partitions` (its conversion and maintenance timed).

Each layout has a database of its own (the partitioned one's name ends in `_partitioned`), so
a loaded table of either is kept for the next run (BENCH_CRON_REUSE=1) and the plain one is
never converted under another run's feet.
"""

import importlib
import time
from datetime import timedelta
from types import ModuleType

from django.db import connection

from bench.cron_report import note, phase
from scheduling.recurring.models import ScheduledOccurrence

SUFFIX = "_partitioned"
CHURN_DAYS_AHEAD = 16  # bench/cron_churn.py's DAYS_AHEAD (which imports this module)
INTERVAL = timedelta(days=1)


def database_of(layout: str, url: str) -> str:
    """The database URL of a layout's runs, from the bench's own (`url`)."""
    plain = url.removesuffix(SUFFIX)
    return plain + SUFFIX if layout == "partitioned" else plain


def is_partitioned() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relkind = 'p' FROM pg_class WHERE oid = 'scheduled_occurrence'::regclass"
        )
        return bool(cursor.fetchone()[0])


def partitions() -> ModuleType:
    try:
        return importlib.import_module("scheduling.rows.partitions")
    except ImportError as exc:
        raise SystemExit(
            f"BENCH_CRON_LAYOUT=partitioned needs scheduling.rows.partitions ({exc});"
            " use BENCH_CRON_LAYOUT=plain"
        ) from None


def prepare_layout(layout: str) -> None:
    """The plain table as migrated, or the table converted (once) and maintained."""
    if layout == "plain":
        if is_partitioned():
            raise SystemExit(
                "scheduled_occurrence is partitioned in this database: the plain layout needs"
                " a database of its own (DATABASE_URL)"
            )
        return
    module = partitions()
    if is_partitioned():
        print("  the table is partitioned already (a reused load): the conversion is not timed")
    else:
        convert_timed(module)
    with phase("partition maintenance"):
        started = time.perf_counter()
        # Day partitions up to the churn's two days (bench/cron_churn.py), past the old one.
        spec = module.DuePartitions(interval=INTERVAL, premake=CHURN_DAYS_AHEAD + 3)
        module.maintain(ScheduledOccurrence, spec=spec)
        note("partition maintenance", time.perf_counter() - started, "s")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_partition_tree('scheduled_occurrence') WHERE isleaf"
        )
        print(f"    {cursor.fetchone()[0]} partitions")


def convert_timed(module: ModuleType) -> None:
    with phase("conversion to partitions by day"):
        started = time.perf_counter()
        done = module.convert(ScheduledOccurrence, interval=INTERVAL)
        note("conversion to partitions by day", time.perf_counter() - started, "s")
    for step, seconds in done.steps:
        print(f"    {step}: {seconds:,.1f} s")
    # Today's rows too (the window's, the burst's): only later days get partitions of their own.
    print(f"    rows due before {done.bound:%Y-%m-%d %H:%M} UTC stay in the old partition")
