"""What one sweep batch publishes: each claimed row's message, the rows that expire instead, and
the rows whose message cannot be built.

A model with `handler_batch_size` N > 0 gets one message for up to N of its rows (kwargs
`{"events": [...]}`, each event the one a single message would carry), shared by those rows in
the plan; every other row gets its own message.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils import timezone

from scheduling.delivery.publishing import PreparedMessage, Publisher
from scheduling.delivery.publishing.targets import routes_remembered
from scheduling.delivery.sweep.backlog import room_on
from scheduling.delivery.tracing import with_trace_headers
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.outgoing import OutgoingJson, OutgoingTask
from scheduling.time.times import iso_utc


@dataclass
class BatchPlan:
    # Each row to publish with its message; rows of one batch message share the same object,
    # side by side.
    publish: list[tuple[ScheduledEvent, PreparedMessage]] = field(default_factory=list)
    expired: list[ScheduledEvent] = field(default_factory=list)
    poisoned: list[tuple[ScheduledEvent, str]] = field(default_factory=list)
    # Rows for a plain-JSON queue already full (sweep/backlog), and those queues' room.
    held: list[ScheduledEvent] = field(default_factory=list)
    full: dict[str, int] = field(default_factory=dict)

    def messages(self) -> list[PreparedMessage]:
        """The messages to publish, once each, in order."""
        return [prepared for _, prepared, first in self._indexed() if first]

    def set_aside(self, refused: dict[int, str]) -> None:
        """Rows whose message (by its index in messages()) the broker refused join the poisoned
        ones: retried, then failed."""
        if not refused:
            return
        kept = []
        index = -1
        for row, prepared, first in self._indexed():
            index += first
            if index in refused:
                self.poisoned.append((row, refused[index]))
            else:
                kept.append((row, prepared))
        self.publish = kept

    def _indexed(self) -> Iterator[tuple[ScheduledEvent, PreparedMessage, bool]]:
        previous: PreparedMessage | None = None
        for row, prepared in self.publish:
            yield row, prepared, prepared is not previous
            previous = prepared


def plan_batch(rows: list[ScheduledEvent], *, cutoff: datetime, publisher: Publisher) -> BatchPlan:
    plan = BatchPlan()
    published_at = iso_utc(timezone.now())
    model = type(rows[0])
    in_batches = model.handler_batch_size > 0  # read once: this loop is the sweep's per-row path
    batched: list[tuple[ScheduledEvent, dict[str, Any]]] = []
    to_queues: list[tuple[ScheduledEvent, OutgoingJson]] = []
    with routes_remembered():
        for row in rows:
            deadline = row.expires_at()
            if deadline is not None and cutoff > deadline:
                plan.expired.append(row)
                continue
            try:
                if in_batches:
                    batched.append((row, row.to_event(published_at)))
                elif isinstance(message := row.to_message(published_at), OutgoingJson):
                    to_queues.append((row, message))  # prepared once its queue has room
                else:
                    prepared = publisher.prepare(with_trace_headers(message, [row]))
                    plan.publish.append((row, prepared))
            except Exception as exc:  # a row that cannot be serialised must not hold up the rest
                plan.poisoned.append((row, failure(exc)))
    if batched:
        add_batch_messages(plan, model, batched, publisher)
    if to_queues:
        add_queue_messages(plan, to_queues, publisher)
    return plan


def add_queue_messages(
    plan: BatchPlan, messages: list[tuple[ScheduledEvent, OutgoingJson]], publisher: Publisher
) -> None:
    """Plain JSON for named queues, as many as each queue's backlog bound lets in; the rest
    held (sweep/backlog)."""
    room = room_on(publisher, {message.queue for _, message in messages})
    for row, message in messages:
        if room[message.queue] <= 0:
            plan.held.append(row)
            plan.full[message.queue] = room[message.queue]
            continue
        try:
            plan.publish.append((row, publisher.prepare(message)))
            room[message.queue] -= 1
        except Exception as exc:
            plan.poisoned.append((row, failure(exc)))


def add_batch_messages(
    plan: BatchPlan,
    model: type[ScheduledEvent],
    events: list[tuple[ScheduledEvent, dict[str, Any]]],
    publisher: Publisher,
) -> None:
    size = model.handler_batch_size
    for start in range(0, len(events), size):
        chunk = events[start : start + size]
        try:
            prepared = publisher.prepare(
                with_trace_headers(batch_message(model, chunk), rows_of(chunk))
            )
        except Exception:
            # One event of the chunk cannot be serialised: each goes alone, to find which.
            for row, event in chunk:
                try:
                    message = with_trace_headers(batch_message(model, [(row, event)]), [row])
                    plan.publish.append((row, publisher.prepare(message)))
                except Exception as exc:
                    plan.poisoned.append((row, failure(exc)))
            continue
        plan.publish.extend((row, prepared) for row, _ in chunk)


def rows_of(chunk: list[tuple[ScheduledEvent, dict[str, Any]]]) -> list[ScheduledEvent]:
    return [row for row, _ in chunk]


def batch_message(
    model: type[ScheduledEvent], chunk: list[tuple[ScheduledEvent, dict[str, Any]]]
) -> OutgoingTask:
    """One message for the chunk's events; its task id names its first event and its size."""
    first = chunk[0][0]
    return OutgoingTask(
        task_name=model.get_handler_task(),
        queue=model.get_queue(),
        task_id=f"{first.event_id}+{len(chunk) - 1}",
        kwargs={"events": [event for _, event in chunk]},
    )


def failure(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"
