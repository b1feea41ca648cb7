"""What the framework tells operators: counters, per-minute buckets, gauges, the batch log line.

`store`: counters and histogram buckets in Redis, written by sweepers, workers and web
processes on any host, and the per-minute hashes the admin's dashboard reads. `gauges`: the
backlog, lateness and failed rows, read from PostgreSQL when asked. `prometheus`: /metrics,
both together. `logs`: the sweep's line for each published batch, the filter that keeps
Celery from logging idle sweep ticks, and a sweeper's line a minute. `lateness`: the bins the
dashboard's lateness percentiles are read from.

Recording is best effort and never fails a sweep or a handler (on_commit callbacks are
`robust`, writes catch every error): with the store down, counts are dropped (one warning per
outage) and the scrape leaves the counters out rather than report zeros that would read as a
counter reset.
"""

from scheduling.delivery.metrics.gauges import COUNT_CAP, due_rows, oldest_due_seconds, snapshot
from scheduling.delivery.metrics.logs import QuietIdleSweeps, quiet_idle_sweeps
from scheduling.delivery.metrics.prometheus import exposition
from scheduling.delivery.metrics.store import (
    MinuteBucket,
    flush_counts,
    last_sweep_ages,
    not_recorded,
    recent_minutes,
    record_handle_failure,
    record_handled,
    record_held,
    record_published,
    record_sweep,
)

__all__ = [
    "COUNT_CAP",
    "MinuteBucket",
    "QuietIdleSweeps",
    "due_rows",
    "exposition",
    "flush_counts",
    "last_sweep_ages",
    "not_recorded",
    "oldest_due_seconds",
    "quiet_idle_sweeps",
    "recent_minutes",
    "record_handle_failure",
    "record_handled",
    "record_held",
    "record_published",
    "record_sweep",
    "snapshot",
]
