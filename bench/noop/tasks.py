"""The no-op handlers: plain Celery's, one event's, a batch's."""

from typing import Any

from celery import shared_task

from bench.noop.models import ScheduledNoop, ScheduledNoopBatch
from scheduling.delivery.handling.batches import handle_batch
from scheduling.delivery.handling.once import handle_once
from scheduling.delivery.tasks import EventHandlerTask


@shared_task(name="bench.noop_plain", ignore_result=True)
def noop_plain() -> None:
    """Plain Celery: no row, no database."""


@shared_task(base=EventHandlerTask, name="bench.noop_single")
def noop_single(event: dict[str, Any]) -> None:
    with handle_once(event, ScheduledNoop):
        pass


@shared_task(base=EventHandlerTask, name="bench.noop_batch")
def noop_batch(events: list[dict[str, Any]]) -> None:
    with handle_batch(events, ScheduledNoopBatch) as batch:
        for _row in batch.rows:
            pass
