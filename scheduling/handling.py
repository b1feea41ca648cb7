"""Effect-once handling: the guard every handler task runs its side effect inside."""

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from django.db import transaction
from django.db.models.functions import Now

from scheduling.base import ScheduledEvent
from scheduling.registry import get_scheduled_model


@contextmanager
def handle_once(event: Mapping[str, Any]) -> Iterator[ScheduledEvent | None]:
    """Yield the event's row if this event still needs handling, else None.

    The row lock serialises duplicate deliveries of one event: the second waits for the first
    to commit, then sees `handled_at` set. It also waits for a sweep that published the event
    but has not committed yet, so a handler never acts on a row that may still roll back to
    pending. On success `handled_at` is set in the same transaction; on an exception nothing is
    recorded and a redelivery tries again.
    """
    model = get_scheduled_model(event["model"])
    with transaction.atomic():
        row = model.objects.select_for_update(of=("self",)).filter(pk=event["pk"]).first()
        if row is None or not row.can_be_handled(event["version"]):
            yield None
            return
        yield row
        model.objects.filter(pk=row.pk).update(handled_at=Now())
