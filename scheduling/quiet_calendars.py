"""Stored calendars that scheduled models name as their quiet hours (`quiet_hours = "nights"`):
such a calendar is in use, so it cannot be deleted or renamed; a name no calendar has is a
warning of `manage.py check --database default` (and of migrate), the checks that may read the
database. Without them, the first row created names the model and the calendar
(scheduling.quiet.stored_calendar)."""

from __future__ import annotations

from collections.abc import Sequence

from django.core.checks import CheckMessage, Warning
from django.db import DatabaseError, router

from scheduling.calendars.models import Calendar
from scheduling.calendars.references import calendar_users
from scheduling.models import ScheduledEvent
from scheduling.registry import scheduled_models


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


def missing_calendar_warnings(databases: Sequence[str] | None) -> list[CheckMessage]:
    """A warning per model naming a calendar that is not stored; nothing unless the check may
    read the calendars' database (and nothing before its table exists)."""
    naming = {model: name for model in scheduled_models() if (name := calendar_named_by(model))}
    alias = router.db_for_read(Calendar)
    if not naming or alias not in (databases or ()):
        return []
    try:
        stored = Calendar.objects.using(alias).filter(name__in=set(naming.values()))
        known = set(stored.values_list("name", flat=True))
    except DatabaseError:  # not migrated yet: migrate runs the check first
        return []
    return [
        Warning(
            f"{model._meta.label}.quiet_hours names the calendar {name!r}, but no calendar "
            "has that name: creating its rows fails until one does.",
            hint="Add it in the admin (Calendars) or the API (POST calendars/), e.g. with "
            'daily_windows ["22:00-07:00"] and its time zone, or change quiet_hours.',
            obj=model,
            id="scheduling.W004",
        )
        for model, name in naming.items()
        if name not in known
    ]
