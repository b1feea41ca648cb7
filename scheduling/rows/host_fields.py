"""A scheduled model's own columns, as the generic API and the default admin show them: its
entities (foreign keys) and its plain fields (every other column the framework does not own)."""

from __future__ import annotations

from typing import Any

from django.db import models

from scheduling.rows.models import SCHEDULING_FIELDS, ScheduledEvent

# Plain fields filtered by exact match; others (dates, durations, JSON) are shown, not filtered.
FILTERABLE = (models.CharField, models.IntegerField, models.BooleanField)


def entity_fields(model: type[ScheduledEvent]) -> list[models.ForeignKey[Any, Any]]:
    return [f for f in model._meta.concrete_fields if isinstance(f, models.ForeignKey)]


def plain_fields(model: type[ScheduledEvent]) -> list[models.Field[Any, Any]]:
    return [
        f
        for f in model._meta.concrete_fields
        if not f.is_relation and not f.primary_key and f.name not in SCHEDULING_FIELDS
    ]


def filterable_fields(model: type[ScheduledEvent]) -> list[models.Field[Any, Any]]:
    return [f for f in plain_fields(model) if f.choices or isinstance(f, FILTERABLE)]
