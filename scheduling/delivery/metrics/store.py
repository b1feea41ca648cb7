"""The counters' store: one Redis hash per model (the default cache's, the lock store) for the
totals, and one per model and minute, kept two days, for the admin's dashboard.

Writes are HINCRBY: sweepers, Celery workers and web processes on any number of hosts add to
one total, and any web process can serve the scrape. (prometheus_client's multiprocess mode
combines the processes of one host only, through a shared directory.) Recording is best effort:
a write never raises, and with the store down counts are dropped (one warning per outage).
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import threading
import time
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import transaction
from prometheus_client.utils import floatToGoString

from scheduling.delivery.metrics.gauges import late_since
from scheduling.delivery.metrics.lateness import binned_quantile, lateness_bin
from scheduling.delivery.metrics.logs import SWEEPS_ALIVE, BatchIds, batch_ids, log_published
from scheduling.rows.databases import database_of, redis_client_for_locks
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.tracing.context import current_trace_id

log = logging.getLogger("scheduling.metrics")

PREFIX = "scheduling:metrics"
MINUTE_TTL = 2 * 24 * 3600  # seconds a per-minute hash is kept
OUTAGE_PAUSE = 10.0  # seconds recording stays off after the store failed

# Off while scheduling.delivery.testing runs a host's test: its counts stay out of the host's Redis.
_recording: ContextVar[bool] = ContextVar("scheduling_metrics_recording", default=True)

LATENESS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
SWEEP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
# HSET of the field's new value only if it is larger (no command of Redis keeps a maximum).
KEEP_MAXIMUM = (
    "local old = tonumber(redis.call('HGET', KEYS[1], ARGV[1])) "
    "if old == nil or tonumber(ARGV[2]) > old then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end"
)


# --- Recording (sweepers, workers) ------------------------------------------------------------


@contextmanager
def not_recorded() -> Iterator[None]:
    """Nothing is counted or logged meanwhile, in this thread (scheduling.delivery.testing's runs)."""
    token = _recording.set(False)
    try:
        yield
    finally:
        _recording.reset(token)


def _after_commit(model: type[ScheduledEvent], callback: Callable[[], None]) -> None:
    if _recording.get():
        transaction.on_commit(callback, using=database_of(model), robust=True)


def label(model: type[ScheduledEvent]) -> str:
    return model._meta.label_lower


def record_published(
    model: type[ScheduledEvent],
    rows: Sequence[ScheduledEvent],
    *,
    cutoff: datetime,
    rate_limited: bool = False,
) -> None:
    """Called inside the batch's transaction: counts and logs the batch once it commits.

    Lateness is the claim's cutoff (the database's clock) minus each row's due_at, or its
    created_at if it was created already due (gauges.LATE_SINCE); the publish follows within
    the same transaction. `rate_limited`: the model's rate limit held the batch
    back; its rows and their lateness are counted apart as well.
    """
    if rows:
        lateness = [max((cutoff - late_since(row)).total_seconds(), 0.0) for row in rows]
        ids, trace_id = batch_ids(rows), current_trace_id()
        _after_commit(
            model,
            lambda: _published(
                label(model), lateness, ids, rate_limited=rate_limited, trace_id=trace_id
            ),
        )


def record_held(model: type[ScheduledEvent], rows: int) -> None:
    """Called inside the batch's transaction: rows kept back by a full queue (sweep/backlog)."""
    _after_commit(model, lambda: _write(lambda pipe: _count(pipe, label(model), "held", rows)))


def record_sweep(
    model: type[ScheduledEvent], duration: float, *, redelivered: int, rate_wait: float = 0.0
) -> None:
    """After a sweep that held its lock, busy or idle: its duration, the time it ended (the
    model's heartbeat: last_sweep_ages()), requeued events, the time it waited for the model's
    rate limit."""
    SWEEPS_ALIVE.tick(label(model), duration)
    key = total_key(label(model))
    bucket = _bucket_field("sweep", SWEEP_BUCKETS, duration)

    def write(pipe: Any) -> None:
        pipe.hincrby(key, bucket, 1)
        pipe.hincrbyfloat(key, "sweep_sum", duration)
        pipe.hset(key, "last_sweep", time.time())
        if redelivered:
            _count(pipe, label(model), "redelivered", redelivered)
        if rate_wait:
            pipe.hincrbyfloat(key, "rate_limit_wait_sum", rate_wait)

    _write(write)


def record_handled(model: type[ScheduledEvent], rows: int = 1) -> None:
    """Called inside the handling's transaction: counted once it commits (buffered, below)."""
    _after_commit(model, lambda: WORKER_COUNTS.add(label(model), "handled", rows))


def record_handle_failure(model: type[ScheduledEvent], *, retried: bool) -> None:
    def count() -> None:
        WORKER_COUNTS.add(label(model), "handle_failures")
        if retried:
            WORKER_COUNTS.add(label(model), "redelivered")

    _after_commit(model, count)


def _published(
    model_label: str,
    lateness: list[float],
    ids: BatchIds,
    *,
    rate_limited: bool,
    trace_id: str | None = None,
) -> None:
    log_published(model_label, lateness, ids, trace_id)
    buckets = _bucket_counts("lateness", LATENESS_BUCKETS, lateness)

    def write(pipe: Any) -> None:
        _count(pipe, model_label, "published", len(lateness))
        for field, count in buckets.items():
            _count(pipe, model_label, field, count)
        _record_lateness(pipe, model_label, lateness)
        pipe.hincrbyfloat(total_key(model_label), "lateness_sum", sum(lateness))
        if rate_limited:
            _count(pipe, model_label, "rate_limited", len(lateness))
            pipe.hincrbyfloat(total_key(model_label), "rate_limited_lateness_sum", sum(lateness))

    _write(write)


def _count(pipe: Any, model_label: str, field: str, amount: int = 1) -> None:
    """The total and this minute's bucket; the minute by the recording host's clock."""
    minute_key = _minute_key(model_label, int(time.time() // 60))
    pipe.hincrby(total_key(model_label), field, amount)
    pipe.hincrby(minute_key, field, amount)
    pipe.expire(minute_key, MINUTE_TTL)


def _record_lateness(pipe: Any, model_label: str, lateness: list[float]) -> None:
    """This minute's bins (metrics.lateness) and maximum: the dashboard's percentiles."""
    minute_key = _minute_key(model_label, int(time.time() // 60))
    for number, count in Counter(lateness_bin(value) for value in lateness).items():
        pipe.hincrby(minute_key, f"lateness_bin:{number}", count)
    pipe.eval(KEEP_MAXIMUM, 1, minute_key, "lateness_max", repr(max(lateness)))
    pipe.expire(minute_key, MINUTE_TTL)


def total_key(model_label: str) -> str:
    return f"{PREFIX}:{model_label}"


def _minute_key(model_label: str, minute: int) -> str:
    return f"{PREFIX}:{model_label}:minute:{minute}"


def _bucket_field(name: str, bounds: Sequence[float], value: float) -> str:
    """Each observation counts in the one smallest bucket that holds it (made cumulative when
    read), so a batch adds one HINCRBY per bucket used, not per row."""
    return _bucket_name(name, bounds, bisect_left(bounds, value))


def _bucket_counts(name: str, bounds: Sequence[float], values: Sequence[float]) -> Counter[str]:
    found = Counter(bisect_left(bounds, value) for value in values)  # each name made once
    return Counter({_bucket_name(name, bounds, index): count for index, count in found.items()})


def _bucket_name(name: str, bounds: Sequence[float], index: int) -> str:
    return f"{name}:{floatToGoString(bounds[index])}" if index < len(bounds) else f"{name}:+Inf"


@dataclass
class _Outage:
    until: float = 0.0  # monotonic time before which recording is skipped
    reported: bool = False


_outage = _Outage()


def _write(commands: Callable[[Any], None]) -> None:
    """One pipelined round trip. Never raises: metrics must not fail what they measure."""
    if not _recording.get() or time.monotonic() < _outage.until:
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


class CountBuffer:
    """The handlers' counts, added up in this process and written at most every FLUSH_INTERVAL.

    A worker handles hundreds of events a second; a round trip to the store for each was a
    share of every handling. The first count after a write starts a timer thread that writes
    what has gathered FLUSH_INTERVAL later (one pipelined round trip); the process's exit and a
    worker child's shutdown write the rest. A process killed outright loses at most the counts
    of its last FLUSH_INTERVAL: the counters, never the rows (docs/operations.md).
    """

    def __init__(self) -> None:
        self.guard = threading.Lock()
        self.counts: Counter[tuple[str, str, int]] = Counter()
        self.timer: threading.Timer | None = None
        self.pid = os.getpid()

    def add(self, model_label: str, field: str, amount: int = 1) -> None:
        if not _recording.get():
            return
        minute = int(time.time() // 60)  # the minute by the recording host's clock
        with self.guard:
            if self.pid != os.getpid():  # a forked child: the parent's counts are the parent's
                self.counts, self.timer, self.pid = Counter(), None, os.getpid()
            self.counts[(model_label, field, minute)] += amount
            if self.timer is None:
                self.timer = threading.Timer(FLUSH_INTERVAL, self.flush)
                self.timer.daemon = True
                self.timer.start()

    def flush(self) -> None:
        with self.guard:
            if self.pid != os.getpid():
                return
            counts, self.counts, self.timer = self.counts, Counter(), None
        if counts:
            _write(lambda pipe: _add_counts(pipe, counts))


def _add_counts(pipe: Any, counts: Counter[tuple[str, str, int]]) -> None:
    for (model_label, field, minute), amount in counts.items():
        minute_key = _minute_key(model_label, minute)
        pipe.hincrby(total_key(model_label), field, amount)
        pipe.hincrby(minute_key, field, amount)
        pipe.expire(minute_key, MINUTE_TTL)


FLUSH_INTERVAL = 1.0  # seconds a handler's count may wait in its process before it is written
WORKER_COUNTS = CountBuffer()
atexit.register(WORKER_COUNTS.flush)


def flush_counts() -> None:
    """Write this process's buffered counts now (a worker child's shutdown; before a read)."""
    WORKER_COUNTS.flush()


# --- Reading: the totals and the dashboard's per-minute buckets -------------------------------


def last_sweep_ages(model_labels: Sequence[str], *, now: float | None = None) -> list[float | None]:
    """Seconds since each model's last sweep ended, by this host's clock (None: no sweep since
    the store began); [] when there is no store or it is down (nothing can be said)."""
    hashes = read_hashes([total_key(name.lower()) for name in model_labels])
    if hashes is None:
        return []
    now = time.time() if now is None else now
    return [
        max(now - fields["last_sweep"], 0.0) if "last_sweep" in fields else None
        for fields in hashes
    ]


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
    hashes = read_hashes([_minute_key(model_label, n) for n in numbers]) or [{}] * minutes
    return [_minute_bucket(number, fields) for number, fields in zip(numbers, hashes, strict=True)]


def _minute_bucket(number: int, fields: dict[str, float]) -> MinuteBucket:
    p50, p99 = minute_percentiles(fields)
    return MinuteBucket(
        minute=datetime.fromtimestamp(number * 60, UTC),
        published=int(fields.get("published", 0)),
        handled=int(fields.get("handled", 0)),
        handle_failures=int(fields.get("handle_failures", 0)),
        lateness_p50=p50,
        lateness_p99=p99,
    )


def minute_percentiles(fields: dict[str, float]) -> tuple[float | None, float | None]:
    """p50 and p99 of a minute's lateness from its bins; a minute recorded before the bins were
    kept has only LATENESS_BUCKETS, interpolated as PromQL does."""
    bins = {
        int(name.rpartition(":")[2]): count
        for name, count in fields.items()
        if name.startswith("lateness_bin:")
    }
    if bins:
        most = fields.get("lateness_max")
        return binned_quantile(0.5, bins, most), binned_quantile(0.99, bins, most)
    buckets = cumulative(fields, "lateness", LATENESS_BUCKETS)
    return quantile(0.5, buckets), quantile(0.99, buckets)


def read_hashes(keys: list[str]) -> list[dict[str, float]] | None:
    """HGETALL of each key in one round trip; None when there is no store or it is down."""
    client = redis_client_for_locks()
    if client is None:
        return None
    flush_counts()  # what this process counted is read too
    try:
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(key)
        replies = pipe.execute()
    except Exception as exc:
        log.warning("metrics store unreachable (%s)", exc)
        return None
    return [{name.decode(): float(value) for name, value in reply.items()} for reply in replies]


def cumulative(
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
