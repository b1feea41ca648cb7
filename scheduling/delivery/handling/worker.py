"""What every handling runs inside, one event's (handle_once) or a batch's (handle_batch)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

from scheduling.delivery import tracing
from scheduling.rows.actors import actor, process_actor
from scheduling.rows.models import ScheduledEvent

T = TypeVar("T")


@contextmanager
def as_worker(
    handling: AbstractContextManager[T],
    model: type[ScheduledEvent],
    events: Sequence[Mapping[str, Any]],
) -> Iterator[T]:
    """The `process` span (scheduling.delivery.tracing) around `handling`, and what the handler
    changes recorded as the worker's doing."""
    with tracing.processing(model, events), actor(process_actor("worker")), handling as row:
        yield row
