"""lateness: a steady rate of events falling due, with beat and a sweeping worker as in production.

Lateness is published_at minus due_at, read from the published messages themselves; the
database's delivered_at (set in the publishing transaction) is checked against due_at too.
"""

import base64
import json
import os
import subprocess
import sys
import time
from datetime import datetime

import orjson
from django.conf import settings
from django.db.models import F

from bench.common import LATENESS_SAMPLES, broker, record
from bench.drain import make_rows
from purchases.models import ScheduledPurchase
from scheduling.models import Status

LEAD_SECONDS = 8  # rows start falling due after beat and worker are up


def start(hold: float, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "LOG_LEVEL": "WARNING", "SCHEDULING_SWEEP_HOLD": str(hold)}
    command = [sys.executable, "-m", "celery", "-A", "project", *args, "-l", "warning"]
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
    return values[min(len(values) - 1, int(share * len(values)))]


def run_lateness(rate: int, seconds: int) -> None:
    for hold in (0.0, 0.9):
        variant = "tick only (defaults)" if not hold else f"hold {hold} s"
        print(f"lateness, {variant}: {rate:,} events/s falling due for {seconds} s; beat + worker")
        run_variant(rate, seconds, hold)
        report(rate * seconds, variant)


def run_variant(rate: int, seconds: int, hold: float) -> None:
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
        deadline = time.monotonic() + LEAD_SECONDS + seconds + 60
        pending = ScheduledPurchase.objects.filter(status=Status.PENDING)
        while pending.exists() and time.monotonic() < deadline:
            time.sleep(1)
    finally:
        for process in processes:
            process.terminate()
            process.wait(30)


def report(total: int, variant: str) -> None:
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
    ]
    for figure, value, unit in figures:
        record("lateness", f"{variant}: {figure}", value, unit, expected=total)
