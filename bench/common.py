"""Shared by the scenarios: the results file, the printed table, bulk data made in SQL."""

import atexit
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis
from django.conf import settings
from django.db import connection

# Test sessions claim pairs of Redis databases 2..15 with this key (tests/settings.py) and
# flush them; the bench takes a pair the same way, so neither flushes the other's queues.
PAIR_KEY = "scheduling-tests:redis-pair:{}"
BENCH_PAIRS = (10, 12, 14, 8, 6, 4, 2)

RESULTS = Path(__file__).resolve().parent / "results.jsonl"
LATENESS_SAMPLES = Path(__file__).resolve().parent / "lateness-latest.json"


def record(scenario: str, figure: str, value: float, unit: str, **extra: object) -> None:
    """Print one figure and append it to bench/results.jsonl."""
    shown = f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3f}"
    print(f"  {scenario:<11} {figure:<44} {shown:>12} {unit}")
    entry = {"scenario": scenario, "figure": figure, "value": value, "unit": unit, **extra}
    entry["at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with RESULTS.open("a") as out:
        out.write(json.dumps(entry) + "\n")


def claim_redis_pair(base: str = "redis://127.0.0.1:6379", wait: float = 900) -> None:
    """Point REDIS_URL and CELERY_BROKER_URL at a free pair of databases, held until exit.

    When test sessions hold every pair, waits for one (up to `wait` seconds).
    """
    if "REDIS_URL" in os.environ or "CELERY_BROKER_URL" in os.environ:
        return  # chosen by the caller
    client = redis.Redis.from_url(f"{base}/0")
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        for first in BENCH_PAIRS:
            key = PAIR_KEY.format(first)
            if client.set(key, os.getpid(), nx=True, ex=6 * 3600):
                atexit.register(client.delete, key)
                os.environ["REDIS_URL"] = f"{base}/{first}"
                os.environ["CELERY_BROKER_URL"] = f"{base}/{first + 1}"
                return
        print("bench: test sessions hold every pair of Redis databases; waiting", flush=True)
        time.sleep(5)
    raise RuntimeError("every Redis database pair stayed claimed by test sessions")


@contextmanager
def timed() -> Iterator[list[float]]:
    """`with timed() as elapsed:` ... `elapsed[0]` is the block's wall time in seconds."""
    box = [0.0]
    started = time.perf_counter()
    yield box
    box[0] = time.perf_counter() - started


def sql(statement: str, params: list[Any] | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def vacuum(*tables: str) -> None:
    for table in tables:
        sql(f"VACUUM ANALYZE {connection.ops.quote_name(table)}")


def broker() -> redis.Redis:
    return redis.Redis.from_url(settings.CELERY_BROKER_URL)


TRAINING_TABLES = (
    "scheduled_training_notification",
    "trainings_pushnotification",
    "trainings_invitation",
    "trainings_questionnaireanswer",
    "trainings_training",
    "trainings_player",
    "trainings_team",
)


ROWS_PER_TRAINING = 20  # about the 22 reminder rungs a real training gets


def make_notification_rows(*, teams: int, rows_per_team: int, due_in: str) -> None:
    """`teams` teams, each with `rows_per_team` pending rows over trainings of 20 rows each.

    Laid out as an application writes them: a training's rows are inserted together, so they are
    neighbours on disk, and trainings of all teams are created interleaved, so one team's rows
    are spread over the whole table in runs of 20. Rows of one training differ by their signed
    offset (one second apart). `due_in` is an SQL interval from now.
    """
    per_training = min(ROWS_PER_TRAINING, rows_per_team)
    sql("TRUNCATE " + ", ".join(TRAINING_TABLES) + " CASCADE")
    # Every NOT NULL column, as the ORM would: the model's defaults live in Django, not in the
    # table. No quiet hours: these rows skip them at insert, and a bench's move (reschedule)
    # must not start applying them.
    sql(
        "INSERT INTO trainings_team (name, timezone, quiet_hours)"
        " SELECT 'team ' || g, 'UTC', false FROM generate_series(1, %s) g",
        [teams],
    )
    sql(
        "INSERT INTO trainings_training (team_id, start_at, end_at, questionnaires_enabled,"
        " invitations_enabled, cancelled_at, created_at, updated_at)"
        " SELECT team.id, now() + interval '30 days', now() + interval '30 days 2 hours', true,"
        " false, NULL, now(), now()"
        " FROM generate_series(1, %s) n CROSS JOIN trainings_team team ORDER BY n, team.id",
        [rows_per_team // per_training],
    )
    sql(
        "INSERT INTO scheduled_training_notification (due_at, status, version, attempts,"
        " delivered_at, handled_at, cancelled_at, cancel_reason, last_error, created_at,"
        ' updated_at, training_id, kind, "offset")'
        " SELECT now() + %s::interval + g * interval '1 microsecond', 'pending', 1, 0, NULL, NULL,"
        " NULL, '', '', now(), now(), t.id, 'post_questionnaire', g * interval '1 second'"
        " FROM trainings_training t CROSS JOIN generate_series(1, %s) g ORDER BY t.id, g",
        [due_in, per_training],
    )
    vacuum(*TRAINING_TABLES)
