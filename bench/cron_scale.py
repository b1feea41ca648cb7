"""cron_scale: the distributed cron's scale on one PostgreSQL primary.

N active recurring schedules (30,000,000 at full size), each with its pending occurrence, are
loaded in SQL (bench/cron_load.py), on the plain table or on one partitioned by day
(BENCH_CRON_LAYOUT=partitioned; `both` runs each in a database of its own and prints them side
by side: bench/cron_layout.py). Then, in turn:

- the steady window: occurrences fall due at RATE a second (1,200) for its length (5 minutes)
  while a paced client creates schedules through `POST /api/schedules/` (5,000 a minute) on
  gunicorn. Real `celery beat` and a `-Q scheduling` worker deliver, as in production; each
  delivery publishes the plain-JSON message and inserts the schedule's next occurrence (a day
  later) in the same transaction;
- the midnight burst: BURST occurrences (1,500,000) due in one second, drained by two sweeper
  slots (bench/cron_burst.py);
- a day of churn and retention: deliveries in bulk SQL on days past retention, the claim's
  index before and after, the purge of a day's done rows, the bytes on disk
  (bench/cron_churn.py).

BENCH_CRON_PHASES (e.g. `window` or `burst,churn`; all three by default) runs only those, on a
reused load (BENCH_CRON_REUSE=1) a phase's figures again in minutes rather than an hour.

Schedules are Quartz crons with seconds (`s m h * * ?`, UTC, daily), so fire times spread over
the seconds as a large installation's do. The schedules that fire during the window and the
burst are the last ones loaded, their times set once the bulk load is done; every other
schedule first fires two days later.

Reported for the window: publish lateness (the message's published_at minus its
scheduled_for, every message read back from Redis), the creations' latency (from the instant
each request was due to start, so a slow answer delays the next and is counted) with each
spell of creations later than a second and the UTC instant it began (to line it up with
PostgreSQL's log), the WAL written, and the CPU the sweeping worker and PostgreSQL spent per
occurrence.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.db import connection

from bench.common import sql, vacuum
from bench.cron_burst import BURST_RATE, arm_burst, run_burst
from bench.cron_churn import Churn, run_churn
from bench.cron_layout import database_of, prepare_layout
from bench.cron_load import TABLES, load_rest
from bench.cron_report import (
    SUMMARY,
    kept,
    machine,
    note,
    note_against,
    phase,
    side_by_side,
    write_summary,
)
from bench.cron_sizes import QUEUE, TEMPLATE, Sizes, burst_sweepers, layout, phases
from bench.cron_window import run_steady
from bench.drain import drain_with_sweep, make_rows, measure

PLAIN_DRAIN_ROWS = 100_000
ARMING_PACE = 28_000.0  # schedules armed a second (the full-size window's, measured)


def run_cron_scale(sizes: Sizes, *, full: bool) -> None:
    sweepers = burst_sweepers(os.environ)  # bad values are refused before the load
    chosen = phases(os.environ)
    if layout(os.environ) == "both":
        run_both(full)
        return
    print(
        f"cron_scale ({layout(os.environ)} layout): {sizes.schedules:,} schedules;"
        f" {sizes.rate:,}/s fall due for {sizes.seconds} s while"
        f" {sizes.creates_per_minute:,}/min are created by POST; a burst of {sizes.burst:,};"
        f" a churn of {sizes.churn:,} a day; the window's SCHEDULING_SWEEP_INTERVAL="
        f"{sizes.interval}, SCHEDULING_SWEEP_HOLD={sizes.hold}, SCHEDULING_SWEEP_HOLD_NAP="
        f"{sizes.hold_nap}"
    )
    with phase(f"load: {sizes.rest:,} schedules with their pending occurrence"):
        loaded = load_schedules(sizes)
    note("load (SQL) of the schedules not due", loaded, "s")
    prepare_layout(layout(os.environ))
    # Without the window, the burst's lead is reckoned at the window's usual arming pace.
    insert_rate = run_steady(sizes) if "window" in chosen else ARMING_PACE
    if "burst" in chosen:
        with phase(f"arming the burst: {sizes.burst:,} schedules"):
            at = arm_burst(sizes.burst, queue=QUEUE, template=TEMPLATE, insert_rate=insert_rate)
        run_burst(sizes.burst, at, queue=QUEUE, sweepers=sweepers)
        against_the_plain_drain(min(sizes.burst, PLAIN_DRAIN_ROWS))
    if "churn" in chosen:
        every = max(1, sizes.rest // sizes.churn)
        churn = Churn(sizes.rest // every, every, sizes.rest, sizes.purge_budget)
        run_churn(churn, sizes.schedules)
    machine()
    write_summary()


def against_the_plain_drain(rows: int) -> None:
    """The burst's rate beside one sweeper slot draining as many one-off events (bench/drain.py's
    pre-order emails) on the same database, machine and moment: an occurrence does more (its
    schedule, its successor, the schedule's bookkeeping), and should cost at most twice."""
    burst = kept.get(BURST_RATE)
    if burst is None:
        return
    with phase(f"plain drain: {rows:,} one-off events, one sweeper slot"):
        make_rows(rows)
        plain = measure("a) sweep, one slot", drain_with_sweep, rows)
    note("plain drain, one slot", plain, "events/s")
    note_against(
        "burst rate / plain one-slot drain",
        burst[0] / plain,
        "x",
        anchor=0.5,
        anchor_label="at least",
    )


def run_both(full: bool) -> None:
    """Each layout in a process and a database of its own, then their figures side by side."""
    runs: dict[str, Path] = {}
    Path(settings.RUN_DIR).mkdir(parents=True, exist_ok=True)
    for name in ("plain", "partitioned"):
        runs[name] = Path(settings.RUN_DIR) / f"bench-cron-{name}.json"
        runs[name].unlink(missing_ok=True)
        env = {**os.environ, "BENCH_CRON_LAYOUT": name, SUMMARY: str(runs[name])}
        env["DATABASE_URL"] = database_of(name, os.environ["DATABASE_URL"])
        command = [sys.executable, "-m", "bench", "cron_scale", *([] if full else ["--quick"])]
        print(f"cron_scale, {name} layout, on {env['DATABASE_URL'].rsplit('/', 1)[1]}", flush=True)
        subprocess.run(command, env=env, check=False)
    side_by_side(runs)


def load_schedules(sizes: Sizes) -> float:
    """The schedules that fire neither in the window nor in the burst, and their occurrences;
    returns seconds.

    With BENCH_CRON_REUSE=1 a table an earlier run loaded at this size is kept: that run's
    window, burst, created schedules and churn are undone.
    """
    started = time.perf_counter()
    if os.environ.get("BENCH_CRON_REUSE") == "1" and loaded_rest() == sizes.rest:
        undo_last_run()
        return time.perf_counter() - started
    load_rest(sizes.rest, queue=QUEUE, template=TEMPLATE)
    return time.perf_counter() - started


def loaded_rest() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM recurring_schedule WHERE name LIKE 'cron-%%'")
        return int(cursor.fetchone()[0])


def undo_last_run() -> None:
    sql(
        "DELETE FROM scheduled_occurrence o USING recurring_schedule s"
        " WHERE s.id = o.schedule_id AND s.name NOT LIKE 'cron-%%'"
    )
    sql("DELETE FROM recurring_schedule WHERE name NOT LIKE 'cron-%%'")
    sql("DELETE FROM scheduled_occurrence WHERE status <> 'pending'")  # the churn's
    # The churn's successors (past), and any loaded row that would fall due within a day.
    sql(
        "UPDATE scheduled_occurrence SET due_at = date_trunc('day', now()) + interval '3 days'"
        " + (mod(schedule_id, 86399) + 1) * interval '1 second'"
        " WHERE status = 'pending' AND due_at < now() + interval '1 day'"
    )
    vacuum(*TABLES)
