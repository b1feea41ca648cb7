"""What the framework tells operators: counters, per-minute buckets, gauges, the batch log line.

Counters and histogram buckets live in Redis (the default cache's, the lock store), one hash
per model, written with HINCRBY: sweepers, Celery workers and web processes on any number of
hosts add to one total, and any web process can serve the scrape. (prometheus_client's
multiprocess mode combines the processes of one host only, through a shared directory.) The
same writes feed per-minute hashes, kept two days, for the admin's dashboard. Gauges (backlog,
lateness, failed rows) are read from PostgreSQL at scrape time, over the partial indexes.

Recording is best effort and never fails a sweep or a handler (on_commit callbacks are
`robust`, writes catch every error): with the store down, counts are dropped (one warning per
outage) and the scrape leaves the counters out rather than report zeros that would read as a
counter reset.
"""

from __future__ import annotations

import ast
import json
import logging
import math
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

from scheduling.locks import redis_client_for_locks
from scheduling.models import ScheduledEvent, Status
from scheduling.registry import scheduled_models

log = logging.getLogger(__name__)
sweep_log = logging.getLogger("scheduling.sweep")  # the batch line belongs to the sweep's log

PREFIX = "scheduling:metrics"
MINUTE_TTL = 2 * 24 * 3600  # seconds a per-minute hash is kept
# Row counts stop here, so a scrape costs the same at 10 million rows as at 10 thousand: a
# gauge at the cap means "at least this many". (Counting 100,000 index entries cost 10-30 ms
# in the benchmark, 10,000 about 1 ms.) Pending rows past the cap are the planner's estimate.
COUNT_CAP = 10_000
EVENT_IDS_IN_LOG = 20  # a published batch's log line lists its ids up to this many
OUTAGE_PAUSE = 10.0  # seconds recording stays off after the store failed

LATENESS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
SWEEP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
COUNTERS = {
    "published": "Events published by the sweep (one per published row).",
    "handled": "Events handled: handle_once committed handled_at.",
    "handle_failures": "Handlings that failed (the handler raised inside handle_once).",
    "redelivered": (
        "Events sent back to be published again: not handled within "
        "SCHEDULING_HANDLING_TIMEOUT (requeued by the sweep), or a failed handling with tries left."
    ),
}


# --- Recording (sweepers, workers) ------------------------------------------------------------


def label(model: type[ScheduledEvent]) -> str:
    return model._meta.label_lower


def record_published(
    model: type[ScheduledEvent], rows: Sequence[ScheduledEvent], *, cutoff: datetime
) -> None:
    """Called inside the batch's transaction: counts and logs the batch once it commits.

    Lateness is the claim's cutoff (the database's clock) minus each row's due_at; the
    publish follows within the same transaction.
    """
    if rows:
        lateness = [(cutoff - row.due_at).total_seconds() for row in rows]
        every = [row.event_id for row in rows] if len(rows) <= EVENT_IDS_IN_LOG else []
        ids = (rows[0].event_id, rows[-1].event_id, every)
        transaction.on_commit(lambda: _published(label(model), lateness, ids), robust=True)


def record_sweep(model: type[ScheduledEvent], duration: float, *, redelivered: int) -> None:
    """After a sweep that held its lock: its duration, the time it ended, requeued events."""
    key = _key(label(model))
    bucket = _bucket_field("sweep", SWEEP_BUCKETS, duration)

    def write(pipe: Any) -> None:
        pipe.hincrby(key, bucket, 1)
        pipe.hincrbyfloat(key, "sweep_sum", duration)
        pipe.hset(key, "last_sweep", time.time())
        if redelivered:
            _count(pipe, label(model), "redelivered", redelivered)

    _write(write)


def record_handled(model: type[ScheduledEvent]) -> None:
    """Called inside the handling's transaction: counted once it commits."""
    transaction.on_commit(
        lambda: _write(lambda pipe: _count(pipe, label(model), "handled")), robust=True
    )


def record_handle_failure(model: type[ScheduledEvent], *, retried: bool) -> None:
    def write(pipe: Any) -> None:
        _count(pipe, label(model), "handle_failures")
        if retried:
            _count(pipe, label(model), "redelivered")

    transaction.on_commit(lambda: _write(write), robust=True)


def _published(model_label: str, lateness: list[float], ids: tuple[str, str, list[str]]) -> None:
    first, last, every = ids
    worst, middle = max(lateness), statistics.median(lateness)
    extra: dict[str, Any] = {"model": model_label, "count": len(lateness)}
    extra |= {"lateness_max_s": round(worst, 3), "lateness_p50_s": round(middle, 3)}
    extra |= {"first_event_id": first, "last_event_id": last}
    if every:
        extra["event_ids"] = every
    sweep_log.info(
        "published %d %s events (%s .. %s), lateness p50 %.3f s, max %.3f s",
        *(len(lateness), model_label, first, last, middle, worst),
        extra=extra,
    )
    buckets = Counter(_bucket_field("lateness", LATENESS_BUCKETS, value) for value in lateness)

    def write(pipe: Any) -> None:
        _count(pipe, model_label, "published", len(lateness))
        for field, count in buckets.items():
            _count(pipe, model_label, field, count)
        pipe.hincrbyfloat(_key(model_label), "lateness_sum", sum(lateness))

    _write(write)


def _count(pipe: Any, model_label: str, field: str, amount: int = 1) -> None:
    """The total and this minute's bucket; the minute by the recording host's clock."""
    minute_key = _minute_key(model_label, int(time.time() // 60))
    pipe.hincrby(_key(model_label), field, amount)
    pipe.hincrby(minute_key, field, amount)
    pipe.expire(minute_key, MINUTE_TTL)


def _key(model_label: str) -> str:
    return f"{PREFIX}:{model_label}"


def _minute_key(model_label: str, minute: int) -> str:
    return f"{PREFIX}:{model_label}:minute:{minute}"


def _bucket_field(name: str, bounds: Sequence[float], value: float) -> str:
    """Each observation counts in the one smallest bucket that holds it (made cumulative when
    read), so a batch adds one HINCRBY per bucket used, not per row."""
    for bound in bounds:
        if value <= bound:
            return f"{name}:{floatToGoString(bound)}"
    return f"{name}:+Inf"


@dataclass
class _Outage:
    until: float = 0.0  # monotonic time before which recording is skipped
    reported: bool = False


_outage = _Outage()


def _write(commands: Callable[[Any], None]) -> None:
    """One pipelined round trip. Never raises: metrics must not fail what they measure."""
    if time.monotonic() < _outage.until:
        return
    try:
        client = redis_client_for_locks()
        if client is None:
            return  # the embedded mode keeps no counters
        pipe = client.pipeline(transaction=False)
        commands(pipe)
        pipe.execute()
    except Exception as exc:
        _outage.until = time.monotonic() + OUTAGE_PAUSE
        level = logging.DEBUG if _outage.reported else logging.WARNING
        log.log(level, "metrics store unreachable (%s); counts are dropped meanwhile", exc)
        _outage.reported = True
        return
    _outage.reported = False


# --- Reading: the dashboard's per-minute buckets ----------------------------------------------


@dataclass(frozen=True)
class MinuteBucket:
    minute: datetime  # aware UTC, start of the minute
    published: int
    handled: int
    handle_failures: int
    lateness_p50: float | None  # seconds, from the histogram buckets of that minute
    lateness_p99: float | None


def recent_minutes(
    model_label: str, minutes: int = 60, *, now: datetime | None = None
) -> list[MinuteBucket]:
    """Oldest first, one bucket per minute (zeros for minutes without data).

    The minute in progress is the last one. With the store unreachable every bucket is zero.
    """
    model_label = model_label.lower()
    last = int((now or datetime.now(UTC)).timestamp() // 60)
    numbers = range(last - minutes + 1, last + 1)
    hashes = _read([_minute_key(model_label, number) for number in numbers]) or [{}] * minutes
    return [_minute_bucket(number, fields) for number, fields in zip(numbers, hashes, strict=True)]


def _minute_bucket(number: int, fields: dict[str, float]) -> MinuteBucket:
    buckets = _cumulative(fields, "lateness", LATENESS_BUCKETS)
    return MinuteBucket(
        minute=datetime.fromtimestamp(number * 60, UTC),
        published=int(fields.get("published", 0)),
        handled=int(fields.get("handled", 0)),
        handle_failures=int(fields.get("handle_failures", 0)),
        lateness_p50=quantile(0.5, buckets),
        lateness_p99=quantile(0.99, buckets),
    )


def _read(keys: list[str]) -> list[dict[str, float]] | None:
    """HGETALL of each key in one round trip; None when there is no store or it is down."""
    client = redis_client_for_locks()
    if client is None:
        return None
    try:
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(key)
        replies = pipe.execute()
    except Exception as exc:
        log.warning("metrics store unreachable (%s)", exc)
        return None
    return [{name.decode(): float(value) for name, value in reply.items()} for reply in replies]


def _cumulative(
    fields: dict[str, float], name: str, bounds: Sequence[float]
) -> list[tuple[float, float]]:
    """(upper bound, observations <= bound) for each bound and +Inf, as Prometheus has them."""
    running, result = 0.0, []
    for bound in [*bounds, math.inf]:
        running += fields.get(f"{name}:{floatToGoString(bound)}", 0)
        result.append((bound, running))
    return result


def quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """As PromQL's histogram_quantile: linear within the bucket; the last finite bound when the
    quantile falls in +Inf; None without observations."""
    total = buckets[-1][1]
    if not total:
        return None
    rank, lower, below = q * total, 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower
            return lower + (bound - lower) * (rank - below) / max(count - below, 1e-9)
        lower, below = bound, count
    return lower


# --- Reading: gauges from the database --------------------------------------------------------


@dataclass(frozen=True)
class ModelSnapshot:
    """Rows of one model now. Counts stop at COUNT_CAP (a count at the cap: at least that),
    but `pending`, which past the cap is PostgreSQL's estimate (from ANALYZE statistics)."""

    pending: int
    due_now: int  # pending rows already due
    oldest_due_seconds: float  # how late the oldest due pending row is; 0.0 when none is due
    failed_rows: int
    awaiting_handling: int  # published, not handled yet (0 for models without a handler)


GAUGES_SQL = """
SELECT
  (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE status = 'pending'
     ORDER BY due_at LIMIT %(cap)s) AS pending),
  (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE status = 'pending'
     AND due_at <= statement_timestamp() ORDER BY due_at LIMIT %(cap)s) AS due),
  (SELECT EXTRACT(EPOCH FROM statement_timestamp() - due_at) FROM {table}
     WHERE status = 'pending' AND due_at <= statement_timestamp() ORDER BY due_at LIMIT 1),
  (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE status = 'failed' LIMIT %(cap)s) AS failed),
  {awaiting}
"""
AWAITING_SQL = """(SELECT count(*) FROM (SELECT 1 FROM {table} WHERE status = 'delivered'
     AND handled_at IS NULL ORDER BY delivered_at LIMIT %(cap)s) AS awaiting)"""


def snapshot(model: type[ScheduledEvent]) -> ModelSnapshot:
    """One query. ORDER BY on the indexed column keeps each count on its partial index (pending
    due_at, awaiting handling) whatever the statistics say."""
    if connection.vendor != "postgresql":
        return _snapshot_orm(model)
    table = connection.ops.quote_name(model._meta.db_table)
    awaiting = AWAITING_SQL.format(table=table) if model.get_awaits_handling() else "0"
    with connection.cursor() as cursor:
        cursor.execute(GAUGES_SQL.format(table=table, awaiting=awaiting), {"cap": COUNT_CAP})
        pending, due, oldest, failed, in_flight = cursor.fetchone()
        if pending >= COUNT_CAP:
            pending = max(_estimated_pending(cursor, table), COUNT_CAP)
    return ModelSnapshot(pending, due, max(float(oldest or 0), 0.0), failed, in_flight)


def _estimated_pending(cursor: Any, table: str) -> int:
    cursor.execute(f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {table} WHERE status = 'pending'")
    plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return int(plan[0]["Plan"]["Plan Rows"])


def _snapshot_orm(model: type[ScheduledEvent]) -> ModelSnapshot:
    """The embedded mode (SQLite): the same figures, without the index tricks."""
    rows = model.objects.all()
    due = rows.due().order_by("due_at")
    oldest = due.values_list("due_at", flat=True).first()
    awaiting = rows.awaiting_handling() if model.get_awaits_handling() else rows.none()
    return ModelSnapshot(
        pending=rows.pending()[:COUNT_CAP].count(),
        due_now=due[:COUNT_CAP].count(),
        oldest_due_seconds=(datetime.now(UTC) - oldest).total_seconds() if oldest else 0.0,
        failed_rows=rows.filter(status=Status.FAILED)[:COUNT_CAP].count(),
        awaiting_handling=awaiting[:COUNT_CAP].count(),
    )


def oldest_due_seconds(model: type[ScheduledEvent]) -> float:
    """How late the oldest due pending row is, by the database's clock (0.0: none due)."""
    if connection.vendor != "postgresql":
        return _snapshot_orm(model).oldest_due_seconds
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT EXTRACT(EPOCH FROM statement_timestamp() - due_at) FROM {table}"
            " WHERE status = 'pending' AND due_at <= statement_timestamp() ORDER BY due_at LIMIT 1"
        )
        row = cursor.fetchone()
    return max(float(row[0]), 0.0) if row else 0.0


# --- The scrape -------------------------------------------------------------------------------


class SchedulingCollector(Collector):
    """Everything /metrics shows, computed when scraped."""

    def collect(self) -> Iterator[Metric]:
        models = [label(model) for model in scheduled_models()]
        totals = _read([_key(name) for name in models])
        yield from _gauge_families({label(model): snapshot(model) for model in scheduled_models()})
        yield GaugeMetricFamily(
            "scheduling_metrics_store_up",
            "1 when the counters' store (Redis) answered this scrape; 0: counters left out.",
            value=0 if totals is None else 1,
        )
        if totals is not None:
            yield from _store_families(dict(zip(models, totals, strict=True)))


def exposition() -> bytes:
    from prometheus_client import generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(SchedulingCollector())
    return generate_latest(registry)


GAUGES = {
    "pending": (
        "scheduling_pending_rows",
        f"Pending rows (counted up to {COUNT_CAP}, then PostgreSQL's estimate).",
    ),
    "due_now": ("scheduling_due_rows", f"Pending rows already due (counted up to {COUNT_CAP})."),
    "oldest_due_seconds": (
        "scheduling_oldest_due_seconds",
        "Seconds the oldest due pending row has waited (0: none due), by the database's clock.",
    ),
    "failed_rows": ("scheduling_failed_rows", f"Failed rows (counted up to {COUNT_CAP})."),
    "awaiting_handling": (
        "scheduling_awaiting_handling_rows",
        f"Published rows not handled yet (counted up to {COUNT_CAP}).",
    ),
}


def _gauge_families(snapshots: dict[str, ModelSnapshot]) -> Iterator[Metric]:
    for field, (name, help_text) in GAUGES.items():
        family = GaugeMetricFamily(name, help_text, labels=["model"])
        for model_label, shot in snapshots.items():
            family.add_metric([model_label], getattr(shot, field))
        yield family


def _store_families(totals: dict[str, dict[str, float]]) -> Iterator[Metric]:
    for counter, help_text in COUNTERS.items():
        family = CounterMetricFamily(f"scheduling_{counter}", help_text, labels=["model"])
        for model_label, fields in totals.items():
            family.add_metric([model_label], fields.get(counter, 0))
        yield family
    yield _histogram(
        "scheduling_publish_lateness_seconds",
        "Publish time (the claim's database clock) minus due_at, per published row.",
        totals,
        ("lateness", LATENESS_BUCKETS),
    )
    yield _histogram(
        "scheduling_sweep_duration_seconds",
        "Duration of sweeps that held their lock (a holding sweep's hold included).",
        totals,
        ("sweep", SWEEP_BUCKETS),
    )
    last = GaugeMetricFamily(
        "scheduling_last_sweep_timestamp_seconds",
        "Unix time the last sweep of the model ended (absent: never since the store began).",
        labels=["model"],
    )
    for model_label, fields in totals.items():
        if "last_sweep" in fields:
            last.add_metric([model_label], fields["last_sweep"])
    yield last


def _histogram(
    name: str,
    help_text: str,
    totals: dict[str, dict[str, float]],
    buckets: tuple[str, Iterable[float]],
) -> Metric:
    prefix, bounds = buckets
    family = HistogramMetricFamily(name, help_text, labels=["model"])
    for model_label, fields in totals.items():
        cumulative = _cumulative(fields, prefix, tuple(bounds))
        family.add_metric(
            [model_label],
            [(floatToGoString(bound), count) for bound, count in cumulative],
            sum_value=fields.get(f"{prefix}_sum", 0.0),
        )
    return family


# --- Logs: no line for an idle sweep tick -----------------------------------------------------


class QuietIdleSweeps(logging.Filter):
    """Drops Celery's INFO lines about `scheduling.sweep` ticks that delivered nothing, and
    beat's line for sending each tick.

    A worker logs "Task ... received" and "Task ... succeeded ...: {...}" for every task: with
    beat ticking every model every second, that is a dozen lines a second on an idle system.
    "received" is dropped for every sweep tick (nothing is known yet); "succeeded" is kept when
    the sweep changed a row. What a sweep publishes is logged by the sweep itself, one line per
    batch, with the event ids.
    """

    ACTIVITY = ("delivered", "expired", "failed", "retrying", "requeued")

    def filter(self, record: logging.LogRecord) -> bool:
        context = record.args
        if record.name == "celery.beat" and isinstance(context, tuple):
            # Beat's "Sending due task <entry> (<task>)", every second for every model.
            return record.levelno != logging.INFO or "scheduling.sweep" not in context
        if record.levelno != logging.INFO or not isinstance(context, dict):
            return True
        if context.get("name") != "scheduling.sweep":
            return True
        if "return_value" in context:
            return self._did_something(context["return_value"])
        return record.name != "celery.worker.strategy"  # drops "received"

    def _did_something(self, text: object) -> bool:
        try:
            result = ast.literal_eval(str(text))
        except (ValueError, SyntaxError):
            return True  # not a result we can read: keep the line
        if not isinstance(result, dict):
            return True
        return bool(result.get("error")) or any(result.get(key) for key in self.ACTIVITY)


def quiet_idle_sweeps() -> None:
    """From SchedulingConfig.ready(): on the loggers Celery reports each task's receipt and end."""
    for name in ("celery.app.trace", "celery.worker.strategy", "celery.beat"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, QuietIdleSweeps) for f in logger.filters):
            logger.addFilter(QuietIdleSweeps())
