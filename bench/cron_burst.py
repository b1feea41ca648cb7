"""cron_scale's midnight burst: BURST occurrences due in one and the same second, drained by
two sweeper slots (SCHEDULING_SWEEPER_SLOTS=2) under real `celery beat` and a `-Q scheduling -c 4`
worker, as the steady window runs, with the sweep's defaults (no hold): each slot is beat's own
entry a second, so the two sweep in two of the worker's processes at once, each claiming with
SKIP LOCKED. With BENCH_CRON_BURST_SWEEPERS=daemons, two `manage.py sweep --loop --slot N`
daemons instead, sweeping the occurrences alone."""

import os
import subprocess
import sys
import time
from datetime import datetime

import orjson
from django.conf import settings
from django.db import connection

from bench.common import broker
from bench.cron_load import insert_pairs, literal, schedule_columns
from bench.cron_report import note, note_against, phase
from bench.cron_sizes import SWEEPER_SETTINGS
from bench.lateness import percentile
from bench.lateness import start as start_celery
from scheduling.recurring.models import ScheduledOccurrence

SLOTS = 2
SWEEPERS = {"DJANGO_SETTINGS_MODULE": SWEEPER_SETTINGS}  # the sweep's defaults otherwise
# The defaults, no hold: what is due is due at once, and a holding sweep would hand over every
# 1.15 s to the next tick's, whose task then waits for a free process behind the other
# models' held sweeps (4 models x 2 slots a second on a 4-process worker).
HOLD = 0.0
STARTUP = 30  # seconds for beat and worker to come up before the burst falls due
PROGRESS = 5.0  # seconds between two progress lines while it drains
BURST_RATE = "burst: sweep rate, first to last published"
BURST_GOAL = 12_500  # a second: the 1,500,000 of midnight in two minutes


def arm_burst(count: int, *, queue: str, template: str, insert_rate: float) -> datetime:
    """`count` daily schedules all firing at the returned second, each with its occurrence
    due then; the second is far enough for the inserts (`insert_rate` pairs a second, the
    window's: the burst's went slower, hence thrice the time) and the processes' start."""
    lead = STARTUP + int(3 * count / max(insert_rate, 1.0))
    with connection.cursor() as cursor:
        cursor.execute("SELECT date_trunc('second', now()) + %s * interval '1 second'", [lead])
        at: datetime = cursor.fetchone()[0]
    instant = f"{literal(at)}::timestamptz"
    cron = f"to_char({instant} AT TIME ZONE 'UTC', 'FMSS FMMI FMHH24') || ' * * ?'"
    starts = f"{instant} - interval '1 hour'"
    insert_pairs(
        "burst", count, schedule_columns("'burst-' || g", cron, starts, queue, template), instant
    )
    sql_analyze()
    ahead = (at - datetime.now(at.tzinfo)).total_seconds()
    print(f"    the burst falls due at {at:%H:%M:%S} UTC, in {ahead:,.0f} s")
    if ahead < STARTUP / 2:
        print("    (the inserts took longer than allowed for: beat and worker may start late)")
    return at


def sql_analyze() -> None:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE recurring_schedule, scheduled_occurrence")


def run_burst(count: int, at: datetime, *, queue: str, sweepers: str) -> None:
    """The sweepers (`celery`: beat and a worker; `daemons`: a `sweep --loop` a slot) until the
    burst is published (or 10 minutes past what one slot would need at 1,000 a second); then
    its figures."""
    broker().delete(queue)
    how = "beat + worker" if sweepers == "celery" else "a sweep --loop daemon a slot"
    with phase(f"burst: {count:,} due at {at:%H:%M:%S} UTC, {SLOTS} sweeper slots, {how}"):
        processes = start_sweepers() if sweepers == "celery" else start_daemons()
        try:
            wait_for(count, at, queue)
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(60)
    late = lateness_of_messages(queue)
    broker().delete(queue)
    record_burst(count, late)


def start_daemons() -> list[subprocess.Popen[bytes]]:
    """`manage.py sweep --loop --slot N` for the occurrences alone, one a slot."""
    env = {**os.environ, "LOG_LEVEL": "WARNING", "SCHEDULING_SWEEPER_SLOTS": str(SLOTS)}
    manage = str(settings.BASE_DIR / "manage.py")
    label = ScheduledOccurrence._meta.label
    return [
        subprocess.Popen(
            [sys.executable, manage, "sweep", "--loop", "--slot", str(slot), label],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for slot in range(SLOTS)
    ]


def start_sweepers(hold: float = HOLD) -> list[subprocess.Popen[bytes]]:
    settings.RUN_DIR.mkdir(parents=True, exist_ok=True)  # beat's schedule file goes there
    schedule_file = str(settings.RUN_DIR / "bench-cron-burst-celerybeat-schedule")
    before = os.environ.get("SCHEDULING_SWEEPER_SLOTS")
    os.environ["SCHEDULING_SWEEPER_SLOTS"] = str(SLOTS)  # the children's environment
    try:
        return [
            start_celery(hold, "beat", "-s", schedule_file, env=SWEEPERS),
            start_celery(hold, "worker", "-Q", "scheduling", "-c", "4", env=SWEEPERS),
        ]
    finally:
        if before is None:
            del os.environ["SCHEDULING_SWEEPER_SLOTS"]
        else:
            os.environ["SCHEDULING_SWEEPER_SLOTS"] = before


def wait_for(count: int, at: datetime, queue: str) -> None:
    client = broker()
    deadline = time.monotonic() + (at - datetime.now(at.tzinfo)).total_seconds()
    deadline += count / 1000 + 600
    published = 0
    while published < count and time.monotonic() < deadline:
        time.sleep(PROGRESS)
        published = client.llen(queue)
        since = (datetime.now(at.tzinfo) - at).total_seconds()
        if since > 0:
            print(
                f"    {published:,} of {count:,} published, {since:,.0f} s after the burst",
                flush=True,
            )


def lateness_of_messages(queue: str) -> list[float]:
    """published_at - scheduled_for of every message on the queue, in seconds, sorted."""
    client = broker()
    late = []
    length = client.llen(queue)
    for first in range(0, length, 100_000):
        for raw in client.lrange(queue, first, first + 99_999):
            body = orjson.loads(raw)
            due = datetime.fromisoformat(body["scheduled_for"])
            published = datetime.fromisoformat(body["published_at"])
            late.append((published - due).total_seconds())
    return sorted(late)


def record_burst(count: int, late: list[float]) -> None:
    note("burst: occurrences published", len(late), "events", expected=count)
    if not late:
        return
    span = late[-1] - late[0]  # every one was due at the same instant
    rate = (len(late) - 1) / span if span else 0.0
    note_against(BURST_RATE, rate, "/s", anchor=BURST_GOAL, anchor_label="goal (1.5M in 120 s)")
    note("burst: first published - scheduled", late[0], "s")
    note("burst: p50 published - scheduled", percentile(late, 0.50), "s")
    note("burst: p99 published - scheduled", percentile(late, 0.99), "s")
    note("burst: max published - scheduled", late[-1], "s")
    note("burst: published early", sum(v < 0 for v in late), "events")
