"""Pause and resume a scheduled model's delivery, and what the sweep asks.

A sweep of a paused model claims nothing, publishes nothing and requeues nothing: its due rows
stay pending with their due time untouched, and resuming lets the next tick claim them at the
model's rate limit. Messages already on the broker are still handled by the workers.

The sweep reads the pauses once per call (`is_paused`, one indexed lookup); the daemon's tick
reads every pause once for all its models (`pauses_read_once`). Nothing is kept across ticks, so
every sweeper of every host honours a pause at its next tick.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.core.exceptions import ValidationError
from django.db import DEFAULT_DB_ALIAS, transaction

from scheduling.delivery.pauses.models import DeliveryPause, DeliveryPauseEntry, PauseAction
from scheduling.rows.actors import current_actor
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.registry import get_scheduled_model

# Operator state, not row state: on the default database for every model, that of a model
# whose rows live on another database included (one read a tick answers for all of them).
USING = DEFAULT_DB_ALIAS
LABEL_FORM = "app_label.ModelName"

_read_this_tick: ContextVar[frozenset[str] | None] = ContextVar("paused_models", default=None)


def pausable_model(label: str) -> type[ScheduledEvent]:
    """The scheduled model `label` names; a ValidationError on the field `model` otherwise."""
    try:
        return get_scheduled_model(label)
    except LookupError as exc:
        raise ValidationError({"model": f"{exc} (the form is {LABEL_FORM})"}) from None


def delivery_pause(*, model: type[ScheduledEvent], reason: str = "") -> DeliveryPause:
    """Pause `model`'s delivery as the current actor. Pausing a paused model changes nothing:
    the first pause (who, when, why) stands."""
    label = model._meta.label_lower
    with transaction.atomic(using=USING):
        pause, created = DeliveryPause.objects.using(USING).get_or_create(
            model=label, defaults={"reason": reason, "paused_by": current_actor()}
        )
        if created:
            record(label, PauseAction.PAUSED, reason)
    pause.refresh_from_db(fields=["paused_at"])  # the database's clock, set by db_default
    return pause


def delivery_resume(*, model: type[ScheduledEvent], reason: str = "") -> bool:
    """Resume `model`'s delivery; False if it was not paused."""
    label = model._meta.label_lower
    with transaction.atomic(using=USING):
        deleted, _ = DeliveryPause.objects.using(USING).filter(model=label).delete()
        if deleted:
            record(label, PauseAction.RESUMED, reason)
    return bool(deleted)


def record(label: str, action: PauseAction, reason: str) -> None:
    DeliveryPauseEntry.objects.using(USING).create(
        model=label, action=action, actor=current_actor(), reason=reason
    )


def pauses() -> dict[str, DeliveryPause]:
    """Every pause by its model's label (app_label.model_name)."""
    return {pause.model: pause for pause in DeliveryPause.objects.using(USING).order_by("model")}


def paused_labels() -> frozenset[str]:
    return frozenset(DeliveryPause.objects.using(USING).values_list("model", flat=True))


def is_paused(model: type[ScheduledEvent]) -> bool:
    """Within `pauses_read_once()`, from its one read; else one lookup on the unique index."""
    label = model._meta.label_lower
    read = _read_this_tick.get()
    if read is not None:
        return label in read
    return DeliveryPause.objects.using(USING).filter(model=label).exists()


@contextmanager
def pauses_read_once() -> Iterator[frozenset[str]]:
    """Sweeps inside the block see the pauses as read once at its start: a daemon's tick."""
    token = _read_this_tick.set(paused_labels())
    try:
        yield _read_this_tick.get() or frozenset()
    finally:
        _read_this_tick.reset(token)
