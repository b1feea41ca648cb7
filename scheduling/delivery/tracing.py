"""Delivery's spans (docs/tracing.md): each sweep batch is a `send` span (PRODUCER) linked to
the creation context of every row it publishes, and each message carries a `traceparent` where
Celery's and other instrumentations look for it; each handling is a `process` span (CONSUMER)
linked to its events' creation contexts, or the child of it (SCHEDULING_TRACE_PARENT = "child").

Nothing here starts, reads or writes anything while no tracing SDK records in the process.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from scheduling.rows.conf import scheduling_settings
from scheduling.rows.databases import database_of
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.outgoing import OutgoingMessage, OutgoingTask
from scheduling.rows.tracing.context import (
    SYSTEM,
    W3C,
    Carrier,
    carrier_of,
    links_to,
    stored_carriers,
    tracer,
    tracing_on,
)


@dataclass(frozen=True)
class Sending:
    """The sweep batch being published: its rows' creation contexts and its own span's."""

    carriers: dict[Any, Carrier]
    own: Carrier

    def headers_for(self, rows: Sequence[ScheduledEvent]) -> tuple[tuple[str, str], ...]:
        # A one-event message carries its row's creation context, as a message created then
        # would; a batch message was created by this send.
        carrier = self.carriers.get(rows[0].pk) if len(rows) == 1 else None
        return tuple((carrier or self.own).items())


_sending: ContextVar[Sending | None] = ContextVar("scheduling_sending", default=None)


@contextmanager
def sending(model: type[ScheduledEvent], rows: Sequence[ScheduledEvent]) -> Iterator[None]:
    """Around the publishing of a sweep batch's `rows`."""
    if not tracing_on() or not rows:
        yield
        return
    carriers = stored_carriers(
        model._meta.label_lower, [row.pk for row in rows], database_of(model)
    )
    attributes = {
        **messaging(model, "send"),
        "messaging.batch.message_count": len(rows),
    }
    with tracer().start_as_current_span(
        f"send {model.get_queue()}",
        kind=SpanKind.PRODUCER,
        links=links_to(carriers),
        attributes=attributes,
    ) as span:
        token = _sending.set(Sending(carriers, carrier_of(span)))
        try:
            yield
        finally:
            _sending.reset(token)


def with_trace_headers(message: OutgoingMessage, rows: Sequence[ScheduledEvent]) -> OutgoingMessage:
    """`message` (for `rows`) carrying the trace context, while a batch is being sent. Plain
    JSON bodies carry none: they have no headers on a Redis list."""
    current = _sending.get()
    if current is None or not isinstance(message, OutgoingTask):
        return message
    return dataclasses.replace(message, headers=current.headers_for(rows))


@contextmanager
def processing(
    model: type[ScheduledEvent], events: Sequence[Mapping[str, Any]]
) -> Iterator[trace.Span | None]:
    """Around the handling of `events` (one, or a batch message's): the `process` span."""
    if not tracing_on():
        yield None
        return
    pks = [event["pk"] for event in events]
    carriers = stored_carriers(model._meta.label_lower, pks, database_of(model))
    parent = None
    links = links_to(carriers)
    if scheduling_settings().trace_parent == "child" and len(events) == 1 and carriers:
        parent, links = W3C.extract(next(iter(carriers.values()))), []
    with tracer().start_as_current_span(
        f"process {model.get_queue()}",
        context=parent,
        kind=SpanKind.CONSUMER,
        links=links,
        attributes={**messaging(model, "process"), **event_attributes(model, events)},
    ) as span:
        yield span


def messaging(model: type[ScheduledEvent], operation: str) -> dict[str, Any]:
    return {
        "messaging.system": SYSTEM,
        "messaging.operation.type": operation,
        "messaging.operation.name": operation,
        "messaging.destination.name": model.get_queue(),
        "scheduling.model": model._meta.label_lower,
        "scheduling.guarantee": "at_most_once" if model.at_most_once else "at_least_once",
    }


def event_attributes(
    model: type[ScheduledEvent], events: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    if len(events) != 1:
        return {"messaging.batch.message_count": len(events)}
    event = events[0]
    attributes: dict[str, Any] = {
        "messaging.message.id": str(event.get("id", "")),
        "scheduling.pk": str(event["pk"]),
        "scheduling.version": int(event.get("version", 0)),
    }
    if due_at := event.get("due_at"):
        attributes["scheduling.due_at"] = due_at
        lateness = timezone.now() - datetime.fromisoformat(due_at)
        attributes["scheduling.lateness_seconds"] = round(lateness.total_seconds(), 3)
    return attributes


def note_attempt(row: ScheduledEvent) -> None:
    """On the current `process` span: the try this handling is (1 for the first; the sweep
    counts each publication)."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute("scheduling.attempt", row.attempts)
