"""cron_scale's steady window: RATE occurrences a second fall due for its length under real
`celery beat` and a `-Q scheduling` worker, while a paced client creates schedules through
`POST /api/schedules/` on gunicorn."""

import os
import signal
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime

import orjson
from django.conf import settings
from django.db import connection

from bench.common import broker, sql
from bench.cpu import cpu_seconds, machine_cpu_seconds, postgres_seconds
from bench.create import api_token, start_server
from bench.cron_burst import lateness_of_messages
from bench.cron_load import insert_pairs, literal, schedule_columns
from bench.cron_report import note, note_against, phase
from bench.cron_settings import BENCH_ONLY_APPS
from bench.cron_sizes import QUEUE, TEMPLATE, Sizes, sweeper_env
from bench.cron_waits import WaitSampler
from bench.lateness import percentile
from bench.lateness import start as start_celery
from bench.paced import STALL, Pace, Requests, post_paced, stalls, warm_up
from scheduling.rows.registry import scheduled_models

LEAD_SECONDS = 45  # between arming the window and its first fire: beat, worker and web are up
LATENESS_GOAL = 1.0  # seconds, p99
CPU_GOAL = 100  # µs of the sweeping worker's CPU an occurrence


def run_steady(sizes: Sizes) -> float:
    """Arms the window and runs it; returns the arming's pairs inserted a second."""
    started = time.perf_counter()
    with phase(f"arming the window: {sizes.window:,} schedules"):
        start = arm_window(sizes)
    rate = sizes.window / (time.perf_counter() - started)
    broker().delete(QUEUE)
    with phase(f"window: {sizes.rate:,}/s due for {sizes.seconds} s from {start:%H:%M:%S} UTC"):
        figures = run_window(sizes, start)
    late = lateness_of_messages(QUEUE)
    broker().delete(QUEUE)
    record_lateness(sizes, late)
    record_creations(sizes, figures)
    record_costs(sizes, figures, fired=len(late))
    return rate


def arm_window(sizes: Sizes) -> datetime:
    """The schedules that fire during the run, RATE per second from the returned instant."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT date_trunc('second', now()) + %s * interval '1 second'",
            [LEAD_SECONDS + sizes.window // 20_000],  # about the time the inserts below take
        )
        start = cursor.fetchone()[0]
    fire = f"{literal(start)}::timestamptz + ((g - 1) / {sizes.rate}) * interval '1 second'"
    cron = f"to_char(({fire}) AT TIME ZONE 'UTC', 'FMSS FMMI FMHH24') || ' * * ?'"
    starts = f"{literal(start)}::timestamptz - interval '1 hour'"
    schedule = schedule_columns("'fire-' || g", cron, starts, QUEUE, TEMPLATE)
    insert_pairs("fire", sizes.window, schedule, fire.replace("(g - 1)", "(s.g - 1)"))
    sql("ANALYZE recurring_schedule, scheduled_occurrence")
    return start


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


def run_window(sizes: Sizes, start: datetime) -> dict[str, float]:
    """Beat, worker and gunicorn through the window, with the paced creations; returns the
    run's figures."""
    settings.RUN_DIR.mkdir(parents=True, exist_ok=True)  # beat's schedule file goes there
    schedule_file = str(settings.RUN_DIR / "bench-cron-celerybeat-schedule")
    token = api_token()
    server = start_server(workers=4)
    warm_up("/api/schedules/", token)
    beat, worker = start_sweepers(sizes, schedule_file)
    creations = Requests()
    waits = WaitSampler()
    try:
        waits.start()
        costs = window_costs(
            sizes,
            start,
            {"worker": worker.pid, "beat": beat.pid, "web": server.pid},
            lambda: create_schedules(sizes, token, start, creations),
        )
    finally:
        waits.stop()
        stop(beat, worker, server)
    print_creation_trouble(creations)
    print(f"  where the database's sessions were, {waits.samples:,} samples of pg_stat_activity:")
    for line in waits.report():
        print(f"    {line}")
    return {**costs, **creation_figures(sizes, creations)}


def start_sweepers(sizes: Sizes, schedule_file: str) -> tuple[subprocess.Popen[bytes], ...]:
    """Beat and a `-Q scheduling` worker as the window's deployment (sweeper_env). With
    BENCH_CRON_SWEEP_NICE > 0 at a lower CPU priority than the web (docs/scaling.md measured
    it: on a saturated machine the sweep then falls behind)."""
    env, nice = sweeper_env(sizes), sizes.sweep_nice
    beat = start_celery(sizes.hold, "beat", "-s", schedule_file, nice=nice, env=env)
    processes = str(holding_processes())
    worker = start_celery(
        sizes.hold, "worker", "-Q", "scheduling", "-c", processes, nice=nice, env=env
    )
    return beat, worker


def holding_processes() -> int:
    """Every model's holding sweep needs a worker process of its own for the whole hold
    (SCHEDULING_SWEEP_HOLD's rule: concurrency at least models x slots), or the occurrences'
    sweep waits its turn behind the others' holds; one more for the hourly tasks. The models
    are the project's own (bench/cron_settings.py)."""
    swept = [m for m in scheduled_models() if m._meta.app_config.name not in BENCH_ONLY_APPS]
    return len(swept) + 1


def window_costs(
    sizes: Sizes, start: datetime, processes: dict[str, int], create: Callable[[], None]
) -> dict[str, float]:
    """Waits for the window, runs `create` through it and the window's last sweep; the WAL
    written and the CPU the machine and each part (`processes` with their children,
    PostgreSQL, this client) spent meanwhile."""
    ahead = (start - datetime.now(UTC)).total_seconds()
    if ahead < 1:
        print(f"  the window started {-ahead:.1f} s before beat and worker were up")
    time.sleep(max(0.0, ahead - 1))
    wal_before, parts_before = wal_lsn(), cpu_parts(processes)
    cpu_machine_before = machine_cpu_seconds()
    started = time.monotonic()
    create()
    remaining = sizes.seconds + 5 - (time.monotonic() - started)
    time.sleep(max(0.0, remaining))  # the window's last fires, and their sweep
    parts = {name: cpu - parts_before[name] for name, cpu in cpu_parts(processes).items()}
    print(
        "  CPU in the window, % of one core: "
        + ", ".join(f"{name} {cpu / sizes.seconds * 100:.0f}" for name, cpu in parts.items())
    )
    return {
        "wal": wal_lsn() - wal_before,
        "cpu_worker": parts["worker"],
        "cpu_machine": machine_cpu_seconds() - cpu_machine_before,
    }


def cpu_parts(processes: dict[str, int]) -> dict[str, float]:
    times = os.times()
    return {
        **{name: cpu_seconds([pid]) for name, pid in processes.items()},
        "postgres": postgres_seconds(),
        "client": times.user + times.system,
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


def record_lateness(sizes: Sizes, late: list[float]) -> None:
    if not late:
        note("occurrences published", 0, "events", expected=sizes.window)
        return
    note("occurrences published", len(late), "events", expected=sizes.window)
    note("p50 published - scheduled", percentile(late, 0.50), "s")
    note_against(
        "p99 published - scheduled",
        percentile(late, 0.99),
        "s",
        anchor=LATENESS_GOAL,
        anchor_label="goal p99",
        lower_is_better=True,
    )
    note("max published - scheduled", late[-1], "s")
    note("published early", sum(v < 0 for v in late), "events")


def record_creations(sizes: Sizes, figures: dict[str, float]) -> None:
    note("schedules created by POST", figures["created"], "schedules")
    note_against(
        "creation rate",
        figures["created"] * 60 / sizes.seconds,
        "per minute",
        anchor=sizes.creates_per_minute,
        anchor_label="asked",
    )
    note("creation failures", figures["create_failures"], "requests")
    note("creations not sent (client behind)", figures["not_sent"], "requests")
    note("creation latency p50", figures["create_p50"] * 1000, "ms")
    note("creation latency p99", figures["create_p99"] * 1000, "ms")
    note("creation latency max", figures["create_max"] * 1000, "ms")


def record_costs(sizes: Sizes, figures: dict[str, float], *, fired: int) -> None:
    per_event = max(fired, 1)
    note("WAL written during the run", figures["wal"] / 2**20, "MiB")
    note("WAL per occurrence (incl. creations)", figures["wal"] / per_event, "B")
    note_against(
        "sweeping worker CPU per occurrence",
        figures["cpu_worker"] / per_event * 1e6,
        "µs",
        anchor=CPU_GOAL,
        anchor_label="goal",
        lower_is_better=True,
    )
    note(
        "machine CPU busy (all processes, incl. the API)",
        figures["cpu_machine"] / sizes.seconds * 100,
        "% of a core",
    )
