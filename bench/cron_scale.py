"""cron_scale: the distributed cron's scale on one PostgreSQL primary.

N active recurring schedules (10,000,000 at full size), each with its pending occurrence, are
loaded in SQL. Then for the run's length (10 minutes) occurrences fall due at RATE a second
(1,200) while a paced client creates schedules through `POST /api/schedules/` (5,000 a
minute) on gunicorn. Real `celery beat` and a `-Q scheduling` worker deliver, as in
production; each delivery publishes the plain-JSON message and inserts the schedule's next
occurrence (a day later) in the same transaction.

Schedules are Quartz crons with seconds (`s m h * * ?`, UTC, daily), so fire times spread over
the seconds as a large installation's do. The schedules that fire during the run are the last
ones loaded, their times set once the bulk load is done; every other schedule first fires
two days later.

Reported: publish lateness (the message's published_at minus its scheduled_for, every message
read back from Redis), the creations' latency (from the instant each request was due to start,
so a slow answer delays the next and is counted) with each spell of creations later than a
second and the UTC instant it began (to line it up with PostgreSQL's log), table and index
sizes, the WAL written, and the CPU the sweeping worker and PostgreSQL spent per occurrence.
"""

import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson
from django.conf import settings
from django.db import connection

from bench.anchors import record_against
from bench.common import broker, record, sql, vacuum
from bench.cpu import cpu_seconds, machine_cpu_seconds
from bench.create import api_token, start_server
from bench.lateness import percentile
from bench.lateness import start as start_celery
from bench.paced import STALL, Pace, Requests, post_paced, stalls

QUEUE = "bench-cron"
TEMPLATE = '{"day": "${todaysDate}"}'
LEAD_SECONDS = 45  # between arming the window and its first fire: beat, worker and web are up
LATENESS_GOAL = 1.0  # seconds, p99
TABLES = ("recurring_schedule", "scheduled_occurrence")


@dataclass(frozen=True)
class Sizes:
    schedules: int
    rate: int  # occurrences falling due per second during the run
    seconds: int
    creates_per_minute: int
    hold: float  # SCHEDULING_SWEEP_HOLD for beat and worker

    @property
    def window(self) -> int:
        return self.rate * self.seconds


def load_schedules(sizes: Sizes) -> float:
    """The schedules that do not fire during the run, and their occurrences; returns seconds.

    With BENCH_CRON_REUSE=1 a table an earlier run loaded at this size is kept: only that
    run's window and created schedules are deleted.
    """
    started = time.perf_counter()
    if (
        os.environ.get("BENCH_CRON_REUSE") == "1"
        and loaded_rest() == sizes.schedules - sizes.window
    ):
        sql(
            "DELETE FROM scheduled_occurrence o USING recurring_schedule s"
            " WHERE s.id = o.schedule_id AND s.name NOT LIKE 'cron-%%'"
        )
        sql("DELETE FROM recurring_schedule WHERE name NOT LIKE 'cron-%%'")
        vacuum(*TABLES)
        return time.perf_counter() - started
    sql("TRUNCATE scheduled_occurrence, recurring_schedule RESTART IDENTITY")
    rest = sizes.schedules - sizes.window
    day = "date_trunc('day', now()) + interval '3 days'"
    # Schedule g fires daily at second g mod 86,399 + 1 of the day, from the day after next.
    sql(
        "INSERT INTO recurring_schedule (name, cron, timezone, template_timezone, task, queue,"
        " payload_template, enabled, misfire_policy, catchup_window, starts_at, version,"
        " created_at, updated_at)"
        " SELECT 'cron-' || g, mod(s, 60) || ' ' || mod(s / 60, 60) || ' ' || (s / 3600)"
        " || ' * * ?', 'UTC', '', '', %s, %s::jsonb, true, 'fire_once', interval '1 day',"
        f" {day}, 1, now(), now()"
        " FROM generate_series(1, %s) g, LATERAL (SELECT mod(g, 86399) + 1 AS s) t",
        [QUEUE, TEMPLATE, rest],
    )
    insert_occurrences(f"{day} + ((mod(id, 86399) + 1) * interval '1 second')", "TRUE", [])
    vacuum(*TABLES)
    return time.perf_counter() - started


def loaded_rest() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM recurring_schedule WHERE name LIKE 'cron-%%'")
        return int(cursor.fetchone()[0])


def insert_occurrences(due_at: str, where: str, params: list[object]) -> None:
    """Each selected schedule's pending occurrence, due at the SQL expression `due_at`."""
    sql(
        "INSERT INTO scheduled_occurrence (schedule_id, schedule_version, manual, missed_run,"
        " catch_up, due_at, status, version, attempts, cancel_reason, last_error, created_at,"
        f" updated_at) SELECT id, 1, false, 0, false, {due_at}, 'pending', 1, 0, '', '',"
        f" now(), now() FROM recurring_schedule WHERE {where} ORDER BY id",
        params,
    )


def arm_window(sizes: Sizes) -> datetime:
    """The schedules that fire during the run, RATE per second from the returned instant."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT date_trunc('second', now()) + %s * interval '1 second'",
            [LEAD_SECONDS + sizes.window // 20_000],  # about the time the inserts below take
        )
        start = cursor.fetchone()[0]
    fire = f"%s::timestamptz + ((g - 1) / {sizes.rate}) * interval '1 second'"
    sql(
        "INSERT INTO recurring_schedule (name, cron, timezone, template_timezone, task, queue,"
        " payload_template, enabled, misfire_policy, catchup_window, starts_at, version,"
        " created_at, updated_at)"
        " SELECT 'fire-' || g, to_char(f, 'FMSS FMMI FMHH24') || ' * * ?', 'UTC', '', '', %s,"
        " %s::jsonb, true, 'fire_once', interval '1 day', %s::timestamptz - interval '1 hour',"
        " 1, now(), now()"
        f" FROM generate_series(1, %s) g, LATERAL (SELECT ({fire}) AT TIME ZONE 'UTC' AS f) t",
        [QUEUE, TEMPLATE, start, sizes.window, start],
    )
    # Due times from the name's number, as the crons above: ids go on from earlier runs.
    insert_occurrences(
        "%s::timestamptz + ((substr(name, 6)::int - 1) / %s) * interval '1 second'",
        "name LIKE 'fire-%%'",
        [start, sizes.rate],
    )
    sql("ANALYZE recurring_schedule, scheduled_occurrence")
    return start


def sizes_of_tables() -> dict[str, int]:
    sizes = {}
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(
                "SELECT pg_table_size(%s), pg_indexes_size(%s), (SELECT count(*) FROM "
                + connection.ops.quote_name(table)
                + ")",
                [table, table],
            )
            heap, indexes, rows = cursor.fetchone()
            sizes[f"{table} rows"] = rows
            sizes[f"{table} heap"] = heap
            sizes[f"{table} indexes"] = indexes
    return sizes


def wal_lsn() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")
        return int(cursor.fetchone()[0])


def create_schedules(sizes: Sizes, token: str, start: datetime, results: Requests) -> None:
    """POST /api/schedules/ at creates_per_minute, paced by intended start times."""
    total = sizes.creates_per_minute * sizes.seconds // 60
    begin = time.monotonic() + max(0.0, (start - datetime.now(UTC)).total_seconds())
    pace = Pace(total, 60 / sizes.creates_per_minute, begin, sizes.seconds)
    # Daily at a minute half a day from the run's window: created, never due during it.
    hour = (start.hour + 12) % 24
    post_paced(pace, "/api/schedules/", token, lambda n: schedule_body(n, hour), results)


def schedule_body(n: int, hour: int) -> bytes:
    return orjson.dumps(
        {
            "name": f"api-{n}",
            "cron": f"{n % 60} {hour} * * *",
            "timezone": "UTC",
            "queue": QUEUE,
            "payload_template": {"day": "${todaysDate}"},
        }
    )


def lateness_of_messages() -> list[float]:
    """published_at - scheduled_for of every message on the queue, in seconds, sorted."""
    client = broker()
    late = []
    length = client.llen(QUEUE)
    for first in range(0, length, 100_000):
        for raw in client.lrange(QUEUE, first, first + 99_999):
            body = orjson.loads(raw)
            due = datetime.fromisoformat(body["scheduled_for"])
            published = datetime.fromisoformat(body["published_at"])
            late.append((published - due).total_seconds())
    return sorted(late)


def run_window(sizes: Sizes, start: datetime) -> dict[str, float]:
    """Beat, worker and gunicorn through the window, with the paced creations; returns the
    run's figures."""
    schedule_file = str(settings.RUN_DIR / "bench-cron-celerybeat-schedule")
    token = api_token()
    server = start_server(workers=4)
    beat = start_celery(sizes.hold, "beat", "-s", schedule_file)
    worker = start_celery(sizes.hold, "worker", "-Q", "scheduling", "-c", "4")
    creations = Requests()
    try:
        costs = window_costs(
            sizes, start, worker.pid, lambda: create_schedules(sizes, token, start, creations)
        )
    finally:
        stop(beat, worker, server)
    print_creation_trouble(creations)
    return {**costs, **creation_figures(sizes, creations)}


def window_costs(
    sizes: Sizes, start: datetime, worker: int, create: Callable[[], None]
) -> dict[str, float]:
    """Waits for the window, runs `create` through it and the window's last sweep; the WAL
    written and the CPU the worker and the machine spent meanwhile."""
    ahead = (start - datetime.now(UTC)).total_seconds()
    if ahead < 1:
        print(f"  the window started {-ahead:.1f} s before beat and worker were up")
    time.sleep(max(0.0, ahead - 1))
    wal_before, cpu_worker_before = wal_lsn(), cpu_seconds([worker])
    cpu_machine_before = machine_cpu_seconds()
    started = time.monotonic()
    create()
    remaining = sizes.seconds + 5 - (time.monotonic() - started)
    time.sleep(max(0.0, remaining))  # the window's last fires, and their sweep
    return {
        "wal": wal_lsn() - wal_before,
        "cpu_worker": cpu_seconds([worker]) - cpu_worker_before,
        "cpu_machine": machine_cpu_seconds() - cpu_machine_before,
    }


def stop(*processes: subprocess.Popen[bytes]) -> None:
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        process.wait(60)


def print_creation_trouble(creations: Requests) -> None:
    if creations.failures:
        print(f"  {len(creations.failures)} creations failed, e.g. {creations.failures[0]}")
    for due, worst, count in stalls(creations.timeline):
        at = datetime.fromtimestamp(due, UTC).strftime("%H:%M:%S.%f")[:-5]
        print(
            f"  stall: {count} creations due from {at} UTC later than {STALL:g} s, worst {worst:.1f} s"
        )


def creation_figures(sizes: Sizes, creations: Requests) -> dict[str, float]:
    latencies = sorted(creations.latencies)
    asked = sizes.creates_per_minute * sizes.seconds // 60
    return {
        "not_sent": asked - len(latencies),
        "created": len(latencies) - len(creations.failures),
        "create_failures": len(creations.failures),
        "create_p50": percentile(latencies, 0.50),
        "create_p99": percentile(latencies, 0.99),
        "create_max": latencies[-1] if latencies else float("nan"),
    }


def run_cron_scale(sizes: Sizes) -> None:
    print(
        f"cron_scale: {sizes.schedules:,} schedules; {sizes.rate:,}/s fall due for"
        f" {sizes.seconds} s while {sizes.creates_per_minute:,}/min are created by POST;"
        f" SCHEDULING_SWEEP_HOLD={sizes.hold}"
    )
    loaded = load_schedules(sizes)
    start = arm_window(sizes)
    record("cron_scale", "load (SQL) of the schedules not due", loaded, "s")
    broker().delete(QUEUE)
    figures = run_window(sizes, start)
    late = lateness_of_messages()
    broker().delete(QUEUE)
    record_lateness(sizes, late)
    record_creations(sizes, figures)
    for name, value in sizes_of_tables().items():
        unit = "rows" if name.endswith("rows") else "MiB"
        record("cron_scale", name, value / (1 if unit == "rows" else 2**20), unit)
    record_costs(sizes, figures, fired=len(late))
    print(f"  (load average {os.getloadavg()[0]:.2f} at the end)")


def record_lateness(sizes: Sizes, late: list[float]) -> None:
    record("cron_scale", "occurrences published", len(late), "events", expected=sizes.window)
    record("cron_scale", "p50 published - scheduled", percentile(late, 0.50), "s")
    record_against(
        "cron_scale",
        "p99 published - scheduled",
        percentile(late, 0.99),
        "s",
        anchor=LATENESS_GOAL,
        anchor_label="goal p99",
        lower_is_better=True,
    )
    record("cron_scale", "max published - scheduled", late[-1], "s")
    record("cron_scale", "published early", sum(v < 0 for v in late), "events")


def record_creations(sizes: Sizes, figures: dict[str, float]) -> None:
    record("cron_scale", "schedules created by POST", figures["created"], "schedules")
    record_against(
        "cron_scale",
        "creation rate",
        figures["created"] * 60 / sizes.seconds,
        "per minute",
        anchor=sizes.creates_per_minute,
        anchor_label="asked",
    )
    record("cron_scale", "creation failures", figures["create_failures"], "requests")
    record("cron_scale", "creations not sent (client behind)", figures["not_sent"], "requests")
    record("cron_scale", "creation latency p50", figures["create_p50"] * 1000, "ms")
    record("cron_scale", "creation latency p99", figures["create_p99"] * 1000, "ms")
    record("cron_scale", "creation latency max", figures["create_max"] * 1000, "ms")


def record_costs(sizes: Sizes, figures: dict[str, float], *, fired: int) -> None:
    per_event = max(fired, 1)
    record("cron_scale", "WAL written during the run", figures["wal"] / 2**20, "MiB")
    record("cron_scale", "WAL per occurrence (incl. creations)", figures["wal"] / per_event, "B")
    record(
        "cron_scale",
        "sweeping worker CPU per occurrence",
        figures["cpu_worker"] / per_event * 1e6,
        "µs",
    )
    record(
        "cron_scale",
        "machine CPU busy (all processes, incl. the API)",
        figures["cpu_machine"] / sizes.seconds * 100,
        "% of a core",
    )


def quick_or_full(full: bool) -> Sizes:
    # Every fire time is a whole second, so a sweep that waits for beat's next tick would make
    # them up to a second late: hold keeps a drained sweep on until the next due time.
    hold = float(os.environ.get("BENCH_CRON_HOLD", "0.9"))
    if full:
        schedules = int(os.environ.get("BENCH_CRON_SCHEDULES", "10000000"))
        return Sizes(schedules, rate=1200, seconds=600, creates_per_minute=5000, hold=hold)
    return Sizes(100_000, rate=200, seconds=60, creates_per_minute=1200, hold=hold)
