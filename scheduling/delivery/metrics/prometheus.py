"""/metrics in Prometheus' text format: the database's gauges and the store's counters and
histograms, computed when scraped. With the store down the scrape leaves the counters out
rather than report zeros that would read as a counter reset."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

from scheduling.delivery.metrics.gauges import COUNT_CAP, ModelSnapshot, snapshot
from scheduling.delivery.metrics.store import (
    LATENESS_BUCKETS,
    SWEEP_BUCKETS,
    cumulative,
    label,
    read_hashes,
    total_key,
)
from scheduling.delivery.pauses.services import paused_labels
from scheduling.delivery.ratelimit import current_limit
from scheduling.rows.registry import scheduled_models
from scheduling.rows.replicas.conf import read_replicas
from scheduling.rows.replicas.fallbacks import fallback_counts

COUNTERS = {
    "published": "Events published by the sweep (one per published row).",
    "handled": "Events handled: handle_once committed handled_at.",
    "handle_failures": "Handlings that failed (the handler raised inside handle_once).",
    "redelivered": (
        "Events sent back to be published again: not handled within the model's handling "
        "timeout (requeued by the sweep), or a failed handling with tries left."
    ),
    "held": (
        "Rows the sweep kept pending because the plain-JSON queue they target held "
        "SCHEDULING_QUEUE_TARGET_MAX_BACKLOG messages or more (each hold counts once)."
    ),
    "rate_limited": (
        "Events published after the model's rate limit held them back (the sweep waited for its "
        "budget, or the budget cut its claim short): their lateness is partly the limit's."
    ),
}
# Counters of seconds: metric name -> the store's field, help.
SECONDS = {
    "scheduling_rate_limited_lateness_seconds": (
        "rate_limited_lateness_sum",
        "Sum of the publish lateness of the events counted by scheduling_rate_limited_total.",
    ),
    "scheduling_rate_limit_wait_seconds": (
        "rate_limit_wait_sum",
        "Seconds sweeps spent waiting for the model's rate limit to allow more events.",
    ),
}
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
        f"Published rows not handled yet, effect not begun (counted up to {COUNT_CAP}).",
    ),
    "in_flight": (
        "scheduling_in_flight_rows",
        f"At-most-once rows whose effect began and has not reported back (up to {COUNT_CAP}).",
    ),
    "stuck_in_flight": (
        "scheduling_stuck_in_flight_rows",
        "In-flight rows past the model's handling timeout: left for a person "
        f"(counted up to {COUNT_CAP}).",
    ),
}


class SchedulingCollector(Collector):
    """Everything /metrics shows, computed when scraped."""

    def collect(self) -> Iterator[Metric]:
        models = [label(model) for model in scheduled_models()]
        totals = read_hashes([total_key(name) for name in models])
        yield from _gauge_families({label(model): snapshot(model) for model in scheduled_models()})
        yield _rate_limits()
        yield _paused()
        yield GaugeMetricFamily(
            "scheduling_metrics_store_up",
            "1 when the counters' store (Redis) answered this scrape; 0: counters left out.",
            value=0 if totals is None else 1,
        )
        if totals is not None:
            yield from _store_families(dict(zip(models, totals, strict=True)))
            yield from _replica_fallbacks()


def exposition() -> bytes:
    from prometheus_client import generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(SchedulingCollector())
    return generate_latest(registry)


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
    for name, (field, help_text) in SECONDS.items():
        family = CounterMetricFamily(name, help_text, labels=["model"])
        for model_label, fields in totals.items():
            family.add_metric([model_label], fields.get(field, 0.0))
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
    yield _last_sweep(totals)
    yield _since_last_sweep(totals)


def _replica_fallbacks() -> Iterator[Metric]:
    """Present when SCHEDULING_READ_REPLICAS is set (scheduling.rows.replicas)."""
    if not read_replicas():
        return
    family = CounterMetricFamily(
        "scheduling_replica_fallbacks",
        "Safe requests whose reads went to the primary: every replica unreachable, or none had "
        "replayed the client's last write yet (behind).",
        labels=["replica", "reason"],
    )
    for (replica, reason), count in sorted((fallback_counts() or {}).items()):
        family.add_metric([replica, reason], count)
    yield family


def _rate_limits() -> Metric:
    family = GaugeMetricFamily(
        "scheduling_rate_limit_per_second",
        "Events per second the sweep publishes at most for the model, across every sweeper "
        "(absent: unlimited).",
        labels=["model"],
    )
    for model in scheduled_models():
        limit = current_limit(model)
        if limit is not None:
            family.add_metric([label(model)], limit)
    return family


def _paused() -> Metric:
    family = GaugeMetricFamily(
        "scheduling_paused",
        "1 while the model's delivery is paused (manage.py scheduling_pause), else 0.",
        labels=["model"],
    )
    paused = paused_labels()
    for model in scheduled_models():
        family.add_metric([label(model)], 1 if model._meta.label_lower in paused else 0)
    return family


def _last_sweep(totals: dict[str, dict[str, float]]) -> Metric:
    last = GaugeMetricFamily(
        "scheduling_last_sweep_timestamp_seconds",
        "Unix time the last sweep of the model ended (absent: never since the store began).",
        labels=["model"],
    )
    for model_label, fields in totals.items():
        if "last_sweep" in fields:
            last.add_metric([model_label], fields["last_sweep"])
    return last


def _since_last_sweep(totals: dict[str, dict[str, float]]) -> Metric:
    """The same heartbeat as an age, so that an alert needs no clock of its own; /healthz and
    the dashboard say "no sweep for N s" past SCHEDULING_HEALTH_MAX_SWEEP_AGE."""
    ages = GaugeMetricFamily(
        "scheduling_seconds_since_last_sweep",
        "Seconds since the last sweep of the model ended, idle or not, by the scraped host's "
        "clock (absent: never since the store began).",
        labels=["model"],
    )
    now = time.time()
    for model_label, fields in totals.items():
        if "last_sweep" in fields:
            ages.add_metric([model_label], max(now - fields["last_sweep"], 0.0))
    return ages


def _histogram(
    name: str,
    help_text: str,
    totals: dict[str, dict[str, float]],
    buckets: tuple[str, Sequence[float]],
) -> Metric:
    prefix, bounds = buckets
    family = HistogramMetricFamily(name, help_text, labels=["model"])
    for model_label, fields in totals.items():
        family.add_metric(
            [model_label],
            [
                (floatToGoString(bound), count)
                for bound, count in cumulative(fields, prefix, bounds)
            ],
            sum_value=fields.get(f"{prefix}_sum", 0.0),
        )
    return family
