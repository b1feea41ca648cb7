"""When delivery counts as late or stalled: the rules /healthz and the admin's alarms share.

Late: a model's oldest due pending row has waited longer than SCHEDULING_HEALTH_MAX_LATENESS
(/healthz answers 503, the dashboard and "needs attention" show the model in alarm). Stalled
handling: published rows not handled within the model's handling timeout (the sweep publishes
them again; the admin shows them meanwhile). Not swept: no sweep of a model has ended for
SCHEDULING_HEALTH_MAX_SWEEP_AGE, due rows or not (beat or every sweeper is gone; /healthz and
the dashboard say "no sweep for N s"; /metrics has the seconds).

A paused model (scheduling_pause) is neither late nor unswept: its rows wait on purpose, and
/healthz says "paused" instead.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError
from django.db.models import Q

from scheduling.delivery import metrics
from scheduling.delivery.pauses.models import DeliveryPause
from scheduling.delivery.pauses.services import paused_labels, pauses
from scheduling.rows.conf import scheduling_settings
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.querysets import ScheduledEventQuerySet, awaiting_handling_q, stuck_in_flight_q
from scheduling.rows.registry import scheduled_models


def max_lateness() -> float:
    return scheduling_settings().health_max_lateness


def is_late(oldest_due_seconds: float) -> bool:
    """The oldest due pending row has waited past SCHEDULING_HEALTH_MAX_LATENESS."""
    return oldest_due_seconds > max_lateness()


def late_models() -> list[tuple[type[ScheduledEvent], float]]:
    """(model, seconds its oldest due row has waited) of each late model, by the database's
    clock. Nothing due is never late, even with no sweeper running."""
    late = []
    for model in delivering_models():
        seconds = metrics.oldest_due_seconds(model)
        if is_late(seconds):
            late.append((model, seconds))
    return late


def handling_deadline(model: type[ScheduledEvent], now: datetime) -> datetime:
    """Rows published before this and still not handled are past the handling timeout."""
    return now - timedelta(seconds=model.get_handling_timeout())


def not_handled_in_time(
    rows: ScheduledEventQuerySet[Any], now: datetime
) -> ScheduledEventQuerySet[Any]:
    """Of `rows` (any filter on one scheduled model), those awaiting handling past the model's
    handling timeout, and at-most-once rows whose effect has been in flight that long."""
    deadline = handling_deadline(rows.model, now)
    return rows.filter(
        awaiting_handling_q() & Q(delivered_at__lt=deadline) | stuck_in_flight_q(rows.model, now)
    )


def max_sweep_age() -> float:
    return scheduling_settings().health_max_sweep_age


def unswept_models(*, now: float | None = None) -> list[tuple[type[ScheduledEvent], float]]:
    """(model, seconds since its last sweep) of each model not swept for longer than
    SCHEDULING_HEALTH_MAX_SWEEP_AGE, by the sweeps' heartbeat in the counters' store. A model
    never swept since the store began (a new install) and a site without the store (the
    embedded mode) have no heartbeat to judge by: not listed."""
    models = delivering_models()
    ages = metrics.last_sweep_ages([model._meta.label_lower for model in models], now=now)
    return [
        (model, age)
        for model, age in zip(models, ages, strict=False)
        if age is not None and age > max_sweep_age()
    ]


def no_sweep_text(seconds: float) -> str:
    return f"no sweep for {seconds:.0f} s (limit {max_sweep_age():g} s)"


def unswept_text(*, now: float | None = None) -> str:
    """Empty when every model was swept lately, else what /healthz says of each model."""
    return "; ".join(
        f"{model._meta.label_lower}: {no_sweep_text(seconds)}"
        for model, seconds in unswept_models(now=now)
    )


def delivering_models() -> list[type[ScheduledEvent]]:
    """The scheduled models not paused."""
    try:
        paused = paused_labels()
    except DatabaseError:  # /healthz reports the database itself; judge every model meanwhile
        paused = frozenset()
    return [model for model in scheduled_models() if model._meta.label_lower not in paused]


def pause_text(pause: DeliveryPause) -> str:
    why = f": {pause.reason}" if pause.reason else ""
    return f"paused by {pause.paused_by} since {pause.paused_at.isoformat()}{why}"


def paused_text() -> str:
    """Empty when nothing is paused, else what /healthz says of each paused model."""
    return "; ".join(f"{label}: {pause_text(pause)}" for label, pause in pauses().items())
