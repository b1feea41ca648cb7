"""Reconciliation, run by each sweep of a model whose handler runs handle_once: rows published
more than the model's handling timeout ago (SCHEDULING_HANDLING_TIMEOUT unless it sets its own)
and still not handled (the message was lost, or no worker consumes its queue) go back to
pending, due now, to be published again (another try); out of its max attempts, they fail.
Each sends event_failed (and event_gave_up once failed) after the commit.

SKIP LOCKED leaves a row whose handler is running (it holds the row lock) to finish; a handler
that starts after this finds the row pending and does nothing, so the effect stays single.
An at-most-once row in flight (its effect began: effect_started_at) is never requeued, however
long it stays: the effect may have happened. Past the handling timeout it is stuck_in_flight()
for a person to check, then retry or cancel.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from scheduling.delivery.handling.signals import send_after_commit_for
from scheduling.delivery.sweep import sql
from scheduling.rows.conf import SchedulingSettings
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.partitions import retrying_moved_rows

log = logging.getLogger("scheduling.sweep")  # its lines belong to the sweep's log


def requeue_unhandled(
    model: type[ScheduledEvent], *, conf: SchedulingSettings, now: datetime | None = None
) -> tuple[int, int]:
    """Publish again (or fail) what was not handled in time. Returns (requeued, failed)."""
    unhandled = unhandled_rows(model, conf, now)
    # Every tick runs this: one probe of the awaiting-handling index, and the transaction only
    # when something is stale.
    if not sql.any_unhandled(unhandled):
        return 0, 0
    # Its requeue moves rows (due_at = now): another sweeper's, met by this one's lock, may be
    # in another partition by then; the transaction runs again (partitions.moved).
    requeued, failed = retrying_moved_rows(
        lambda: requeue_in_transaction(model, conf, unhandled), f"requeue of {model._meta.label}"
    )
    if requeued or failed:
        log_requeued(model, len(requeued), len(failed))
    return len(requeued), len(failed)


def requeue_in_transaction(
    model: type[ScheduledEvent], conf: SchedulingSettings, unhandled: sql.Unhandled
) -> tuple[list[Any], list[Any]]:
    with transaction.atomic(using=unhandled.using):
        # a sweeper frozen here lets its rows go, too
        sql.configure_sweep_transaction(conf, unhandled.using)
        requeued, failed = sql.requeue_rows(unhandled)
        send_after_commit_for(model, requeued, unhandled.note, will_retry=True)
        send_after_commit_for(model, failed, unhandled.note, will_retry=False)
    return requeued, failed


def unhandled_rows(
    model: type[ScheduledEvent], conf: SchedulingSettings, now: datetime | None
) -> sql.Unhandled:
    timeout = model.get_handling_timeout()
    return sql.Unhandled(
        model=model,
        timeout=timedelta(seconds=timeout),
        limit=conf.batch_size,
        max_attempts=model.get_max_attempts(),
        note=f"not handled within {timeout:g} s of its publication",
        now=now,
    )


def log_requeued(model: type[ScheduledEvent], requeued: int, failed: int) -> None:
    log.warning(
        "sweep of %s: %d events not handled within %g s published again, %d failed",
        model._meta.label,
        requeued,
        model.get_handling_timeout(),
        failed,
    )
