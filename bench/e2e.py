"""e2e: events handled a second end to end, beside plain Celery on the same worker.

Every variant is handled by the same worker, started from the project's Celery app as
documented: `celery -A project worker -Q <its queue> -c 2` (prefork), on the bench's Redis broker.
a. plain: N plain Celery tasks that do nothing, queued first, then the worker started. Timed
   from the first message the worker takes off the queue to the moment the queue and kombu's
   `unacked` hash are both empty (polled every 5 ms): no per-task work is added to time it.
b. single: N ScheduledNoop rows due at once, handled through handle_once by a no-op handler.
c. batched: the same, ScheduledNoopBatch (up to 100 rows a message, handle_batch).
d. trainings: N training reminders (the recording push backend).
e. purchases: N pre-order emails (at most once) over SMTP to a local sink that takes every
   message at once (bench/fake_smtp.py --rate 0); its duplicates are counted.
b-e run real `celery beat` and a `-Q scheduling -c 1` sweeping worker beside the handler.
The rows are made due an hour ahead; once one canary row has gone through beat, sweeper and
handler (all started and warm), the rest are made due at once. events/s is the burst's rows
over their first to last `handled_at`. CPU per event, for each process group: the handler's
and the sweeper's worker trees (their prefork children included) and beat, from /proc, over
the burst; PostgreSQL (every postgres process) and the Redis server, whole: other databases'
work on a shared machine lands there too (PostgreSQL's is counted and printed).
"""

import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import redis
from django.conf import settings
from django.db.models import Count, Max, Min

from bench.common import broker, make_notification_rows, sql, vacuum
from bench.drain import make_rows
from bench.e2e_report import Outcome, Snapshot, report
from bench.noop.models import ScheduledNoop, ScheduledNoopBatch
from bench.release import ROOT as PROJECT_ROOT
from bench.release import free_port, start_provider, stop
from bench.release_plan import Plan
from bench.release_report import ProviderStats
from purchases.models import ScheduledPurchase
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.registry import scheduled_models
from scheduling.rows.states import Status
from trainings.models import ScheduledTrainingNotification

PLAIN_QUEUE = "bench_plain"
POLL = 0.005  # seconds between two looks at the plain queue
SETTLE_POLL = 0.2  # seconds between two looks at the burst's rows
FAR = "1 hour"  # rows wait this far ahead until the burst is made due
DONE = (Status.FAILED, Status.CANCELLED, Status.EXPIRED)  # settled without handled_at


@dataclass(frozen=True)
class Scheduled:
    """A variant of scheduled rows: its model, how its rows are made, its workers' settings."""

    name: str
    model: type[ScheduledEvent]
    seed: Callable[[int], None]
    env: dict[str, str] = field(default_factory=dict)


def run_e2e(events: int) -> None:
    print(
        f"e2e: {events:,} events per variant, each handled by `celery -A project worker"
        " -Q <queue> -c 2` (prefork)"
    )
    outcomes = [run_plain(events)]
    for variant in scheduled_variants():
        outcomes.append(run_scheduled(variant, events))
    report(outcomes)


def scheduled_variants() -> list[Scheduled]:
    push = {"TRAININGS_PUSH_BACKEND": "trainings.push.RecordingPushBackend"}
    return [
        Scheduled("single", ScheduledNoop, lambda n: seed_noop(ScheduledNoop, n)),
        Scheduled("batched", ScheduledNoopBatch, lambda n: seed_noop(ScheduledNoopBatch, n)),
        Scheduled("trainings", ScheduledTrainingNotification, seed_reminders, push),
        Scheduled("purchases", ScheduledPurchase, lambda n: make_rows(n, due_in=FAR)),
    ]


# --- a. plain Celery ---------------------------------------------------------------------------


def run_plain(events: int) -> Outcome:
    print(
        f"  plain: {events:,} no-op tasks queued, then the worker; timed from its first take"
        " off the queue until the queue and the unacked hash are empty (5 ms polls)"
    )
    broker().flushdb()
    publish_plain(events)
    handler = celery("plain", process_env(), *handler_args(PLAIN_QUEUE, "plain"))
    roots = {"handler": handler.pid}
    try:
        started = wait_for_first_take(events, handler)
        before = Snapshot.take(roots)
        ended = wait_until_drained(events, handler)
        after = Snapshot.take(roots)
    finally:
        stop([handler])
    return Outcome("plain", events, ended - started, before, after)


def publish_plain(events: int) -> None:
    from celery import current_app

    with current_app.producer_or_acquire() as producer:
        for _ in range(events):
            current_app.send_task("bench.noop_plain", queue=PLAIN_QUEUE, producer=producer)


def wait_for_first_take(events: int, worker: subprocess.Popen[bytes]) -> float:
    client, deadline = broker(), time.monotonic() + 180
    while client.llen(PLAIN_QUEUE) >= events:
        alive_or_fail({"plain": worker}, deadline)
        time.sleep(POLL)
    return time.monotonic()


def wait_until_drained(events: int, worker: subprocess.Popen[bytes]) -> float:
    client, deadline = broker(), time.monotonic() + 120 + events / 50
    while True:
        with client.pipeline(transaction=False) as pipe:
            queued, unacked = pipe.llen(PLAIN_QUEUE).hlen("unacked").execute()
        if not queued and not unacked:
            return time.monotonic()
        alive_or_fail({"plain": worker}, deadline)
        time.sleep(POLL)


# --- b-e. scheduled rows ---------------------------------------------------------------------


def run_scheduled(variant: Scheduled, events: int) -> Outcome:
    print(f"  {variant.name}: {events:,} {variant.model._meta.label} rows; beat, sweeper, handler")
    provider, env = None, process_env(variant.env)
    seed(variant, events)
    if variant.model is ScheduledPurchase:
        provider, env = sink(events, env)
    processes = start_all(variant, env)
    roots = {name: process.pid for name, process in processes.items()}
    try:
        canary = first_through(variant.model, processes)
        sql(f"UPDATE {variant.model._meta.db_table} SET due_at = now() WHERE id <> %s", [canary])
        # After the set-up's UPDATE: the next beat tick, up to a second away, starts the burst.
        before = Snapshot.take(roots)
        wait_until_settled(variant.model, processes, events)
        after = Snapshot.take(roots)
    finally:
        stop(list(processes.values()))
        if provider is not None:
            stop([provider])
    handled, seconds = burst_span(variant.model, canary)
    counts = {**unhandled(variant.model), **(sink_counts() if provider is not None else {})}
    return Outcome(variant.name, handled, seconds, before, after, counts)


def seed(variant: Scheduled, events: int) -> None:
    """`events` rows of the variant due an hour ahead; no other scheduled row, history or
    message."""
    tables = [m._meta.db_table for m in scheduled_models() if m is not variant.model]
    sql(f"TRUNCATE scheduling_event_history, {', '.join(tables)} CASCADE")
    variant.seed(events)
    broker().flushdb()
    redis.Redis.from_url(settings.REDIS_URL).flushdb()  # no lock nor limit left over


def seed_noop(model: type[ScheduledEvent], events: int) -> None:
    table = model._meta.db_table
    sql(f"TRUNCATE {table}")
    sql(
        f"INSERT INTO {table} (due_at, status, version, attempts, cancel_reason, last_error,"
        " created_at, updated_at) SELECT now() + %s::interval, 'pending', 1, 0, '', '', now(),"
        " now() FROM generate_series(1, %s)",
        [FAR, events],
    )
    vacuum(table)


def seed_reminders(events: int) -> None:
    make_notification_rows(teams=max(events // 20, 1), rows_per_team=20, due_in=FAR)
    sql(
        "INSERT INTO trainings_player (team_id, name, push_token) SELECT id, 'p', '' FROM trainings_team"
    )


def start_all(variant: Scheduled, env: dict[str, str]) -> dict[str, subprocess.Popen[bytes]]:
    schedule = str(settings.RUN_DIR / "bench-e2e-celerybeat-schedule")
    queue = variant.model.get_queue()
    return {
        "beat": celery("beat", env, "beat", "-s", schedule),
        "sweeper": celery(
            "sweeper", env, "worker", "-Q", "scheduling", "-c", "1", "-n", "e2e-sweeps@%h"
        ),
        "handler": celery("handler", env, *handler_args(queue, variant.name)),
    }


def first_through(
    model: type[ScheduledEvent], processes: Mapping[str, subprocess.Popen[bytes]]
) -> int:
    """Make the first row due now and wait until it is handled: beat, the sweeper and the
    handler are then up. Its pk."""
    canary = model.objects.order_by("pk").values_list("pk", flat=True)[0]
    sql(f"UPDATE {model._meta.db_table} SET due_at = now() WHERE id = %s", [canary])
    deadline = time.monotonic() + 180
    while not model.objects.filter(pk=canary, handled_at__isnull=False).exists():
        alive_or_fail(processes, deadline)
        time.sleep(SETTLE_POLL)
    return int(canary)


def wait_until_settled(
    model: type[ScheduledEvent], processes: Mapping[str, subprocess.Popen[bytes]], events: int
) -> None:
    unsettled = model.objects.filter(handled_at__isnull=True).exclude(status__in=DONE)
    deadline = time.monotonic() + 120 + events / 20
    while unsettled.exists():
        alive_or_fail(processes, deadline)
        time.sleep(SETTLE_POLL)


def burst_span(model: type[ScheduledEvent], canary: int) -> tuple[int, float]:
    """The burst's rows handled, and the seconds from the first's handled_at to the last's."""
    burst = model.objects.exclude(pk=canary).filter(handled_at__isnull=False)
    span = burst.aggregate(n=Count("pk"), first=Min("handled_at"), last=Max("handled_at"))
    if not span["n"]:
        return 0, float("nan")
    return span["n"], (span["last"] - span["first"]).total_seconds()


def unhandled(model: type[ScheduledEvent]) -> dict[str, float]:
    """The rows that settled without being handled, by status: none, when all went well."""
    rows = model.objects.filter(handled_at__isnull=True).order_by().values_list("status")
    return {f"rows {status}, not handled": n for status, n in rows.annotate(n=Count("pk"))}


# --- e. the SMTP sink --------------------------------------------------------------------------


def sink(events: int, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    """The local SMTP sink, taking every message at once, and the workers' settings for it."""
    port, stats = free_port(), sink_stats()
    stats.unlink(missing_ok=True)
    plan = Plan(  # with limited=False: --rate 0 (no budget), and no outage
        rows=events, rate=0, outage=0.0, naive_rows=0, concurrency=2, progress_every=1.0, lead=0.0
    )
    provider = start_provider(port, plan, limited=False, stats=stats)
    smtp = {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": str(port),
    }
    return provider, {**env, **smtp}


def sink_stats() -> Path:
    return settings.RUN_DIR / "bench-e2e-smtp.json"


def sink_counts() -> dict[str, float]:
    stats = ProviderStats.read(sink_stats())  # written by the sink as it exits
    return {
        "emails the sink accepted": stats.accepted,
        "duplicates (the sink's count)": stats.duplicates,
    }


# --- processes and CPU -------------------------------------------------------------------------


def process_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "LOG_LEVEL": "WARNING", **(extra or {})}
    env.pop("SCHEDULING_RATE_LIMITS", None)  # the variants run unlimited
    return env


def handler_args(queue: str, name: str) -> list[str]:
    return ["worker", "-Q", queue, "-c", "2", "-P", "prefork", "-n", f"e2e-{name}@%h"]


def celery(name: str, env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    """`celery -A project <args>`; its output goes to .run/bench-e2e-<name>.log."""
    command = [sys.executable, "-m", "celery", "-A", "project", *args, "-l", "warning"]
    settings.RUN_DIR.mkdir(parents=True, exist_ok=True)
    with open(settings.RUN_DIR / f"bench-e2e-{name}.log", "wb") as log:
        return subprocess.Popen(command, env=env, cwd=PROJECT_ROOT, stdout=log, stderr=log)


def alive_or_fail(processes: Mapping[str, subprocess.Popen[bytes]], deadline: float) -> None:
    for name, process in processes.items():
        if process.poll() is not None:
            raise RuntimeError(f"e2e: {name} exited ({process.returncode}): .run/bench-e2e-*.log")
    if time.monotonic() > deadline:
        raise RuntimeError("e2e: the events were not handled in time: .run/bench-e2e-*.log")
