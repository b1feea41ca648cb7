"""Plain-JSON queues nobody empties: before a batch publishes on a named queue (a keyed job's or a
recurring schedule's target), the sweep asks the broker how many messages wait there (LLEN on
Redis, a passive queue_declare on RabbitMQ) and adds no more than SCHEDULING_QUEUE_TARGET_MAX_
BACKLOG allows. The rows it leaves stay pending, nothing lost and nothing published: their due
time moves later (the time asked for kept in business_due_at, as quiet hours keep it), by as
long as they have waited, from RECHECK_FIRST up to RECHECK_MAX, so that a queue without a
consumer costs the sweep a look every few minutes rather than every tick, and rows due on
other queues go first. Each hold is a WARNING line and counts in
scheduling_held_for_backlog_total; a row's first hold is in its history ("queue backlog").
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta

from django.db.models import DateTimeField, DurationField, ExpressionWrapper, F, Value
from django.db.models.functions import Coalesce, Greatest, Least, Now

from scheduling.delivery import metrics
from scheduling.delivery.publishing import Publisher
from scheduling.rows.conf import scheduling_settings
from scheduling.rows.history import bulk
from scheduling.rows.history.models import Kind
from scheduling.rows.models import ScheduledEvent

log = logging.getLogger("scheduling.sweep")

HOW = "queue backlog"
RECHECK_FIRST = timedelta(seconds=5)
RECHECK_MAX = timedelta(minutes=10)


def room_on(publisher: Publisher, queues: Collection[str]) -> dict[str, int]:
    """How many more messages each queue may take now (0 or less: none)."""
    limit = scheduling_settings().queue_target_max_backlog
    waiting = publisher.backlog(sorted(queues))
    return {queue: limit - waiting.get(queue, 0) for queue in queues}


def hold(
    model: type[ScheduledEvent],
    rows: Sequence[ScheduledEvent],
    *,
    now: datetime,
    full: Mapping[str, int],
) -> int:
    """Inside the batch's transaction: `rows` (claimed, not published) due again later.
    `full`: each full queue's room (how far below zero)."""
    if not rows:
        return 0
    limit = scheduling_settings().queue_target_max_backlog
    names = ", ".join(sorted(full))
    reason = f"{names}: {limit:,} messages waiting or more (SCHEDULING_QUEUE_TARGET_MAX_BACKLOG)"
    log.warning("sweep of %s: %d rows held back; %s", model._meta.label, len(rows), reason)
    values = held_values(now)
    # Held before (or moved by a retry): only the due time moves again, no entry each time.
    # The first statement moves none of the second's rows: their (id, due time) still hold.
    model.objects.located(rows).filter(business_due_at__isnull=False).update(**values)
    first = model.objects.located(rows).filter(business_due_at__isnull=True)
    change = bulk.Change(Kind.RESCHEDULED, values, {"how": HOW, "reason": reason})
    bulk.apply(first, change, held=True)
    metrics.record_held(model, len(rows))
    return len(rows)


def held_values(now: datetime) -> dict[str, object]:
    """due_at = now + what the row has waited (from its business time, or its creation if it
    was created already due), within [RECHECK_FIRST, RECHECK_MAX]."""
    business = Coalesce(F("business_due_at"), F("due_at"))
    waited = ExpressionWrapper(
        Value(now) - Greatest(business, F("created_at")), output_field=DurationField()
    )
    delay = Least(Greatest(waited, Value(RECHECK_FIRST)), Value(RECHECK_MAX))
    return {
        "due_at": ExpressionWrapper(Value(now) + delay, output_field=DateTimeField()),
        "business_due_at": business,
        "updated_at": Now(),
    }
