"""What the dashboard and "needs attention" raise an alarm for, and when a backlog ends.

A model is in alarm when its oldest due row is late by /healthz's rule
(SCHEDULING_HEALTH_MAX_LATENESS, `scheduling.ops.health`), or when published rows wait for their
handler past the model's handling timeout (a stalled worker). Each alarm comes with a text
label, so the page does not tell it by colour alone.

A backlog's expected end is its due rows over the pace: the rate published over the last
minute or two (the metrics store), capped by the model's publish limit when it has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from scheduling.delivery import metrics, ratelimit
from scheduling.delivery.metrics.gauges import ModelSnapshot
from scheduling.ops import health
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.querysets import ScheduledEventQuerySet

PACE_MINUTES = 2  # the last full minute and the one in progress


@dataclass(frozen=True)
class ModelAlarms:
    late_seconds: float | None  # how late the oldest due row is, when past the limit
    max_lateness: float
    # Rows awaiting handling past the timeout (counted up to COUNT_CAP); None: the model's
    # events end at publishing, nothing awaits a handler.
    not_handled: int | None
    handling_timeout: float
    handling_deadline: datetime  # published before this and not handled: past the timeout

    @property
    def labels(self) -> list[str]:
        labels = []
        if self.late_seconds is not None:
            labels.append(
                f"Late: the oldest due row waits {self.late_seconds:.0f} s"
                f" (limit {self.max_lateness:g} s)"
            )
        if self.not_handled:
            rows = "row" if self.not_handled == 1 else "rows"
            labels.append(
                f"Stalled: {self.not_handled} {rows} not handled within {self.handling_timeout:g} s"
            )
        return labels


def model_alarms(
    rows: ScheduledEventQuerySet[Any],
    snapshot: ModelSnapshot,
    now: datetime,
    *,
    paused: bool = False,
) -> ModelAlarms:
    """`snapshot` is the model's gauges; `rows` the ones to count as not handled in time. A
    paused model's due rows wait on purpose: never late."""
    model: type[ScheduledEvent] = rows.model
    not_handled = None
    if model.get_awaits_handling():
        not_handled = 0
        # The snapshot's counts are the probe: no query when nothing awaits or is stuck.
        if snapshot.awaiting_handling or snapshot.stuck_in_flight:
            not_handled = health.not_handled_in_time(rows, now)[: metrics.COUNT_CAP].count()
    late = health.is_late(snapshot.oldest_due_seconds) if snapshot.due_now and not paused else False
    return ModelAlarms(
        late_seconds=snapshot.oldest_due_seconds if late else None,
        max_lateness=health.max_lateness(),
        not_handled=not_handled,
        handling_timeout=model.get_handling_timeout(),
        handling_deadline=health.handling_deadline(model, now),
    )


# --- The backlog's expected end ---------------------------------------------------------------


@dataclass(frozen=True)
class Backlog:
    rows: int  # due pending rows
    pace: float  # events/s expected from now on
    done_at: datetime | None  # None: nothing due, or no progress

    @property
    def text(self) -> str:
        if not self.rows:
            return "nothing due"
        if self.done_at is None:
            return "no progress"
        return f"done in {self.duration_text()} (at {timezone.localtime(self.done_at):%H:%M})"

    def duration_text(self) -> str:
        seconds = self.rows / self.pace
        if seconds < 60:
            return "< 1 min"
        minutes = round(seconds / 60)
        if minutes < 120:
            return f"~{minutes} min"
        return f"~{minutes // 60} h {minutes % 60:02d} min"


def expected_backlog(
    model: type[ScheduledEvent],
    due_rows: int,
    recent: Sequence[metrics.MinuteBucket],
    now: datetime,
) -> Backlog:
    """`recent`: the model's minute buckets, oldest first, ending with the minute of `now`."""
    pace = expected_pace(model, published_per_second(recent, now))
    done_at = now + timedelta(seconds=due_rows / pace) if due_rows and pace > 0 else None
    return Backlog(rows=due_rows, pace=pace, done_at=done_at)


def published_per_second(recent: Sequence[metrics.MinuteBucket], now: datetime) -> float:
    """What the last full minute and the one in progress published, per second of them."""
    buckets = recent[-PACE_MINUTES:]
    if not buckets:
        return 0.0
    seconds = (now - buckets[0].minute).total_seconds()
    return sum(b.published for b in buckets) / max(seconds, 1.0)


def expected_pace(model: type[ScheduledEvent], published_per_second: float) -> float:
    """Events/s the backlog will drain at: the recent pace, never above the model's limit."""
    limit = publish_limit(model)
    return published_per_second if limit is None else min(published_per_second, limit)


def publish_limit(model: type[ScheduledEvent]) -> float | None:
    """The most events/s the sweep publishes of `model` (its rate limit); None: no limit."""
    return ratelimit.current_limit(model)
