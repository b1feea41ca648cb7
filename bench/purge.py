"""purge: done rows deleted from a large table while its events keep falling due.

The table is scheduled_purchase, the one the lateness scenario sweeps: its events (a steady
rate, as in `lateness`) plus a history of delivered, cancelled and failed rows, some past their
retention (one in ten at the default sizes), spread evenly over the table. The lateness run happens twice on this
same table, with beat and a sweeping worker as in production: once alone, once with a purge of
every done row running alongside (in this process, the code the hourly task runs). Reported:
the purge's rate, and the events' lateness during the purge next to the run without it.
"""

import base64
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

import orjson
from django.conf import settings
from django.db import connection
from django.db.models.functions import Now

from bench.common import broker, record, sql, vacuum
from bench.drain import make_rows
from bench.lateness import LEAD_SECONDS, percentile, start
from purchases.models import ScheduledPurchase
from scheduling.rows.purge import PurgeResult, count_purgeable, purge_model
from scheduling.rows.states import Status

P99_TOLERANCE = 1.2  # the goal: the sweep's p99 lateness within 20% of the run without a purge
MIN_WINDOW = 10  # seconds of purge needed to compare lateness percentiles

HISTORY = """
INSERT INTO scheduled_purchase (due_at, status, version, attempts, delivered_at, handled_at,
    cancelled_at, cancel_reason, last_error, created_at, updated_at, purchase_id, track_id)
SELECT now() - interval '60 days', status, 1, 1,
    CASE WHEN status = 'delivered' THEN now() - age END,
    CASE WHEN status = 'delivered' THEN now() - age END,
    CASE WHEN status = 'cancelled' THEN now() - age END,
    '', '', now() - interval '60 days', now() - age, purchase_id, track_id
FROM (
    SELECT g, purchase_id, track_id,
        CASE WHEN done THEN (ARRAY['delivered', 'cancelled', 'failed', 'expired'])[kind + 1]
             WHEN g %% 10 = 1 THEN 'cancelled' WHEN g %% 10 = 2 THEN 'failed'
             ELSE 'delivered' END AS status,
        CASE WHEN done AND kind >= 2 THEN interval '31 days' WHEN done THEN interval '8 days'
             WHEN g %% 10 = 2 THEN interval '10 days' ELSE interval '1 day' END AS age
    FROM (
        SELECT g, (g * %(done)s) / %(rows)s <> ((g - 1) * %(done)s) / %(rows)s AS done,
            ((g * %(done)s) / %(rows)s) %% 4 AS kind,
            %(first_purchase)s + (g - 1) %% %(purchases)s AS purchase_id,
            %(first_track)s + (g - 1) / %(purchases)s AS track_id
        FROM generate_series(1::bigint, %(rows)s) AS g
    ) AS numbered
) AS history
ORDER BY g
"""


def make_table(total: int, done: int, events: int, spread: str) -> tuple[int, int]:
    """`events` lateness rows (not yet due) and `total - events` history rows, `done` of them
    past their retention. The history has one row per purchase and track (the table's unique
    constraint), so it gets as many tracks as it needs. Returns the events' pk range."""
    make_rows(events, due_in="1 day", spread=spread)
    rows = total - events
    sql(
        "INSERT INTO purchases_track (release_id, position, title, release_date)"
        " SELECT r.id, 1, 'track ' || g, NULL FROM purchases_release r, generate_series(1, %s) g",
        [-(-rows // events)],
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT min(id) FROM purchases_purchase), (SELECT min(id) FROM purchases_track),"
            " (SELECT min(id) FROM scheduled_purchase), (SELECT max(id) FROM scheduled_purchase)"
        )
        first_purchase, first_track, first, last = cursor.fetchone()
        params = {"rows": rows, "done": done, "purchases": events}
        params |= {"first_purchase": first_purchase, "first_track": first_track}
        cursor.execute(HISTORY, params)
    vacuum("purchases_track", "scheduled_purchase")
    return first, last


def make_events_due(first: int, last: int, spread: str) -> None:
    """The lateness rows pending again, falling due from LEAD_SECONDS from now, one per spread."""
    sql(
        "UPDATE scheduled_purchase SET status = 'pending', version = version + 1, attempts = 0,"
        " delivered_at = NULL, handled_at = NULL, updated_at = now(),"
        " due_at = now() + %s::interval + (id - %s) * %s::interval WHERE id BETWEEN %s AND %s",
        [f"{LEAD_SECONDS} seconds", first, spread, first, last],
    )
    vacuum("scheduled_purchase")
    broker().flushdb()


class Purge(threading.Thread):
    """The purge, in a thread of its own (its own database connection)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.result: PurgeResult | None = None
        self.started = self.ended = 0.0
        self.error = ""

    def run(self) -> None:
        self.started = time.time()
        try:
            self.result = purge_model(ScheduledPurchase)
        except Exception as exc:  # reported, not swallowed: the figures would be meaningless
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.ended = time.time()
            connection.close()


def samples() -> list[tuple[float, float]]:
    """(due, published - due) of every message on the purchases queue, in epoch seconds."""
    found = []
    for raw in broker().lrange("purchases", 0, -1):
        event = orjson.loads(base64.b64decode(orjson.loads(raw)["body"]))[1]["event"]
        due = datetime.fromisoformat(event["due_at"]).timestamp()
        published = datetime.fromisoformat(event["published_at"]).timestamp()
        found.append((due, published - due))
    return found


def run_events(seconds: int, purge: Purge | None) -> tuple[list[tuple[float, float]], float]:
    """Beat and a sweeping worker deliver the events; the purge starts once they flow and no
    backlog is left (a worker starting up is not the purge's doing). Returns the lateness
    samples and that time."""
    state = settings.RUN_DIR / "bench-purge-celerybeat-schedule"
    state.unlink(missing_ok=True)  # a fresh schedule: beat's hourly purge entry stays quiet
    processes = [
        start(0.0, "beat", "-s", str(state)),
        start(0.0, "worker", "-Q", "scheduling", "-c", "4"),
    ]
    try:
        deadline = time.monotonic() + LEAD_SECONDS + seconds + 60
        pending = ScheduledPurchase.objects.filter(status=Status.PENDING)
        behind = pending.filter(due_at__lt=Now() - timedelta(seconds=1))
        while (not broker().llen("purchases") or behind.exists()) and time.monotonic() < deadline:
            time.sleep(0.05)
        steady = time.time()
        if purge is not None:
            purge.start()
        while pending.exists() and time.monotonic() < deadline:
            time.sleep(1)
        if purge is not None:
            purge.join()
    finally:
        for process in processes:
            process.terminate()
            process.wait(30)
    return samples(), steady


@dataclass
class Lateness:
    events: int
    p50: float
    p99: float
    max: float

    @classmethod
    def of(cls, late: list[float]) -> "Lateness":
        late = sorted(late)
        if not late:
            return cls(0, float("nan"), float("nan"), float("nan"))
        return cls(len(late), percentile(late, 0.5), percentile(late, 0.99), late[-1])


def report(runs: dict[str, Lateness], purge: Purge) -> None:
    assert purge.result is not None, purge.error
    seconds = purge.ended - purge.started
    print("  " + " " * 26 + "".join(f"{name:>16}" for name in runs))
    for name in ("events", "p50", "p99", "max"):
        values = [getattr(lateness, name) for lateness in runs.values()]
        shown = [f"{value:,}" if name == "events" else f"{value:.3f}" for value in values]
        label = "events" if name == "events" else f"{name} published - due (s)"
        print(f"  {label:<26}" + "".join(f"{value:>16}" for value in shown))
    print()
    alone, during = runs["no purge"], runs["during purge"]
    figures = [
        ("rows deleted", purge.result.deleted, "rows"),
        ("rows examined", purge.result.examined, "rows"),
        ("batches", purge.result.batches, "batches"),
        ("purge duration", seconds, "s"),
        ("purge rate (deleted)", purge.result.deleted / seconds, "rows/s"),
        ("purge rate (examined)", purge.result.examined / seconds, "rows/s"),
        ("lateness p50, no purge", alone.p50, "s"),
        ("lateness p50, during purge", during.p50, "s"),
        ("lateness p99, no purge", alone.p99, "s"),
        ("lateness p99, during purge", during.p99, "s"),
        ("p99 during purge / no purge", during.p99 / alone.p99, "x"),
    ]
    for figure, value, unit in figures:
        record("purge", figure, value, unit)
    verdict = "met" if during.p99 <= alone.p99 * P99_TOLERANCE else "NOT met"
    if seconds < MIN_WINDOW:  # a sweep ticks every second: a shorter stretch is noise
        verdict = f"not judged, the purge took under {MIN_WINDOW} s"
    print(f"  goal (p99 during the purge within 20% of the run without): {verdict}")


def between(found: list[tuple[float, float]], start: float, end: float) -> Lateness:
    return Lateness.of([late for due, late in found if start <= due <= end])


def run_purge(total: int, done: int, rate: int, seconds: int) -> None:
    events, spread = rate * seconds, f"{1_000_000 // rate} microseconds"
    print(
        f"purge: {done:,} done rows out of {total:,} in scheduled_purchase, while {rate:,}"
        f" events/s fall due for {seconds} s (beat + worker, tick only)"
    )
    first, last = make_table(total, done, events, spread)
    purgeable = count_purgeable(ScheduledPurchase)
    assert purgeable == done, f"{purgeable} purgeable rows, expected {done}"

    make_events_due(first, last, spread)
    alone, steady = run_events(seconds, None)

    make_events_due(first, last, spread)
    purge = Purge()
    found, _ = run_events(seconds, purge)

    # The sweep hands over between ticks every time budget (10 s): about a second of events is
    # up to a second late then, which is the p99. So the run without a purge is read over all
    # its steady stretch, for as many handovers as possible, not over a purge-long slice of it.
    runs = {
        "no purge": between(alone, steady, float("inf")),
        "during purge": between(found, purge.started, purge.ended),
        "with purge, all": Lateness.of([late for _, late in found]),
    }
    report(runs, purge)
    assert count_purgeable(ScheduledPurchase) == 0
    assert ScheduledPurchase.objects.count() == total - done
