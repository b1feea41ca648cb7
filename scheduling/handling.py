"""Effect-once handling: the guard every handler task runs its side effect inside."""

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar, overload

from django.db import transaction
from django.db.models.functions import Now

from scheduling.models import ScheduledEvent
from scheduling.registry import get_scheduled_model

E = TypeVar("E", bound=ScheduledEvent)


@overload
def handle_once(event: Mapping[str, Any]) -> AbstractContextManager[ScheduledEvent | None]: ...


@overload
def handle_once(event: Mapping[str, Any], model: type[E]) -> AbstractContextManager[E | None]: ...


def handle_once(
    event: Mapping[str, Any], model: type[ScheduledEvent] | None = None
) -> AbstractContextManager[ScheduledEvent | None]:
    """Yield the event's row if this event still needs handling, else None.

    `model`, when given, types the row and refuses an event of another model.

    The row lock serialises duplicate deliveries of one event: the second waits for the first
    to commit, then sees `handled_at` set. It also waits for a sweep that published the event
    but has not committed yet, so a handler never acts on a row that may still roll back to
    pending. On success `handled_at` is set in the same transaction; on an exception nothing is
    recorded and a redelivery tries again.
    """
    event_model = get_scheduled_model(event["model"])
    if model is not None and event_model is not model:
        raise ValueError(f"event {event.get('id')!r} is not a {model._meta.label} event")
    return _handling(event, event_model)


@contextmanager
def _handling(
    event: Mapping[str, Any], model: type[ScheduledEvent]
) -> Iterator[ScheduledEvent | None]:
    with transaction.atomic():
        row = model.objects.select_for_update(of=("self",)).filter(pk=event["pk"]).first()
        if row is None or not row.can_be_handled(event["version"]):
            yield None
            return
        yield row
        model.objects.filter(pk=row.pk).update(handled_at=Now())
