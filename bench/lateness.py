"""lateness: a steady rate of events falling due, with beat and a sweeping worker as in production.

Lateness is published_at minus due_at, read from the published messages themselves; the
database's delivered_at (set in the publishing transaction) is checked against due_at too.
Beside each mode, what it costs while the events fall due: the bench database's transactions
a second (pg_stat_database; every autocommit statement is one) and the CPU of beat and the
sweeping worker (with its pool processes), in % of one core.
"""

import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import orjson
from django.conf import settings
from django.db import connection
from django.db.models import F

from bench.common import LATENESS_SAMPLES, broker, record
from bench.drain import make_rows
from purchases.models import ScheduledPurchase
from scheduling.rows.states import Status

LEAD_SECONDS = 8  # rows start falling due after beat and worker are up


def start(
    hold: float, *args: str, nice: int = 0, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """`celery` with these arguments; `nice` > 0 runs it at that lower CPU priority; `env`
    over the bench's environment."""
    env = {**os.environ, "LOG_LEVEL": "WARNING", "SCHEDULING_SWEEP_HOLD": str(hold), **(env or {})}
    env["PGAPPNAME"] = "bench-sweep"  # its sessions in pg_stat_activity (bench/cron_waits.py)
    command = [sys.executable, "-m", "celery", "-A", "project", *args, "-l", "warning"]
    if nice > 0:
        command = ["nice", "-n", str(nice), *command]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def lateness_of_messages() -> list[float]:
    """published_at - due_at of every message on the purchases queue, in seconds."""
    late = []
    for raw in broker().lrange("purchases", 0, -1):
        event = orjson.loads(base64.b64decode(orjson.loads(raw)["body"]))[1]["event"]
        due = datetime.fromisoformat(event["due_at"])
        published = datetime.fromisoformat(event["published_at"])
        late.append((published - due).total_seconds())
    return sorted(late)


def percentile(values: list[float], share: float) -> float:
    return values[min(len(values) - 1, int(share * len(values)))] if values else float("nan")


# (label, SCHEDULING_SWEEP_HOLD): the defaults; the hold the issue measured; the hold equal to
# the tick interval, where each tick's sweep takes over as the previous one ends.
MODES = (("tick only (defaults)", 0.0), ("hold 0.9 s", 0.9), ("hold 1 s (= interval)", 1.0))


@dataclass
class Load:
    seconds: float
    transactions: int
    cpu_seconds: float


def run_lateness(rate: int, seconds: int) -> None:
    for variant, hold in MODES:
        print(f"lateness, {variant}: {rate:,} events/s falling due for {seconds} s; beat + worker")
        load = run_variant(rate, seconds, hold)
        report(rate * seconds, variant, load)


def run_variant(rate: int, seconds: int, hold: float) -> Load:
    make_rows(
        rate * seconds, due_in=f"{LEAD_SECONDS} seconds", spread=f"{1_000_000 // rate} microseconds"
    )
    broker().flushdb()
    schedule = str(settings.RUN_DIR / "bench-celerybeat-schedule")
    processes = [
        start(hold, "beat", "-s", schedule),
        start(hold, "worker", "-Q", "scheduling", "-c", "4"),
    ]
    try:
        time.sleep(max(seconds_until_first_due(), 0.0))
        first = (time.monotonic(), transactions(), tree_cpu(processes))
        deadline = time.monotonic() + seconds + 60
        pending = ScheduledPurchase.objects.filter(status=Status.PENDING)
        while pending.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        load = Load(
            time.monotonic() - first[0],
            transactions() - first[1],
            tree_cpu(processes) - first[2],
        )
    finally:
        for process in processes:
            process.terminate()
            process.wait(30)
    return load


def seconds_until_first_due() -> float:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXTRACT(EPOCH FROM min(due_at) - statement_timestamp()) FROM scheduled_purchase"
        )
        return float(cursor.fetchone()[0])


def transactions() -> int:
    """Transactions of the bench database so far (all its sessions)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"
        )
        return int(cursor.fetchone()[0])


def tree_cpu(processes: list[subprocess.Popen[bytes]]) -> float:
    """CPU seconds (user + system) of these processes and their children, from /proc."""
    return sum(process_cpu(process.pid) for process in processes)


def process_cpu(pid: int) -> float:
    proc = Path(f"/proc/{pid}")
    try:
        fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        children = [
            int(child)
            for task in (proc / "task").iterdir()
            for child in (task / "children").read_text().split()
        ]
    except OSError:  # ended meanwhile
        return 0.0
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(process_cpu(child) for child in children)


def report(total: int, variant: str, load: Load) -> None:
    late = lateness_of_messages()
    if variant.startswith("tick"):
        LATENESS_SAMPLES.write_text(json.dumps(late))
    early_in_db = ScheduledPurchase.objects.filter(delivered_at__lt=F("due_at")).count()
    figures = [
        ("events published", len(late), "events"),
        ("p50 published - due", percentile(late, 0.50), "s"),
        ("p99 published - due", percentile(late, 0.99), "s"),
        ("max published - due", late[-1], "s"),
        ("published early (message clock)", sum(v < 0 for v in late), "events"),
        ("delivered early (database clock)", early_in_db, "events"),
        ("cost: database transactions", load.transactions / load.seconds, "xact/s"),
        ("cost: CPU of beat + worker", 100 * load.cpu_seconds / load.seconds, "% of a core"),
    ]
    for figure, value, unit in figures:
        record("lateness", f"{variant}: {figure}", value, unit, expected=total)
