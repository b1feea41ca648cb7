"""Finds every concrete ScheduledEvent subclass; no registration code needed. And the stored
calendars they name as their quiet hours (`quiet_hours = "nights"`): such a calendar is in use,
so it cannot be deleted or renamed."""

from typing import Any

from celery.schedules import crontab
from django.apps import apps

from scheduling.rows.conf import scheduling_settings
from scheduling.rows.extensions import extensions
from scheduling.rows.models import ScheduledEvent
from scheduling.time.calendars.references import calendar_users


def scheduled_models() -> list[type[ScheduledEvent]]:
    return [
        model
        for model in apps.get_models()
        if issubclass(model, ScheduledEvent) and not model._meta.abstract
    ]


def get_scheduled_model(label: str) -> type[ScheduledEvent]:
    """Accepts "app_label.ModelName" (any case), or a label an app registered as its model's
    former one (`extensions.former_label()`): a message published by an earlier layout, still
    queued or from a sweeper not yet upgraded, names its model so."""
    try:
        model = apps.get_model(extensions.former_labels.get(label.lower(), label))
    except (LookupError, ValueError):
        model = None
    if model is None or not issubclass(model, ScheduledEvent):
        known = ", ".join(m._meta.label for m in scheduled_models()) or "none"
        raise LookupError(f"{label!r} is not a scheduled model; expected one of: {known}")
    return model


def queue_names() -> list[str]:
    return sorted({scheduling_settings().queue} | {m.get_queue() for m in scheduled_models()})


def beat_schedule() -> dict[str, dict[str, Any]]:
    conf = scheduling_settings()
    sweeps = {
        f"sweep {model._meta.label} slot {slot}": {
            "task": "scheduling.sweep",
            "schedule": conf.sweep_interval,
            "args": (model._meta.label,),
            "kwargs": {"slot": slot},
            # A tick nobody ran in time is worthless: the next one sweeps the same rows.
            "options": {"queue": conf.queue, "expires": max(10 * conf.sweep_interval, 10.0)},
        }
        for model in scheduled_models()
        for slot in range(conf.sweeper_slots)
    }
    purge = {
        "task": "scheduling.purge",
        # On the clock, not every 3600 s from beat's start: beat's entries are made anew at each
        # start, so an interval would put the purge off by an hour at every restart.
        "schedule": crontab(minute=0),
        # A run that waited half an hour in the queue is dropped: the next one is near.
        "options": {"queue": conf.queue, "expires": 1800.0},
    }
    return {**sweeps, "scheduling purge": purge}


def calendar_named_by(model: type[ScheduledEvent]) -> str | None:
    """The calendar a model names as its quiet hours; None for spans or a function of the row."""
    declared = model.quiet_hours
    return declared if isinstance(declared, str) else None


def models_naming(name: str) -> list[str]:
    """calendar_users' finder: "model trainings.ScheduledTrainingNotification (quiet hours)"."""
    return [
        f"model {model._meta.label} (quiet hours)"
        for model in scheduled_models()
        if calendar_named_by(model) == name
    ]


calendar_users.add(models_naming)
