"""Every concrete scheduled model in the admin, with every scheduling action, unless the host
registers it itself."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models

from scheduling.ops.admin.base import ScheduledEventAdmin
from scheduling.rows.host_fields import entity_fields, filterable_fields, plain_fields
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.registry import scheduled_models


def register_scheduled_models(site: admin.AdminSite | None = None) -> list[type[ScheduledEvent]]:
    """Register the scheduled models no admin module registered; returns those it registered.

    Runs from SchedulingConfig.ready(). The admin modules are discovered first (as the admin's
    own ready() does; discovering twice imports nothing twice), so a host's own registration
    always wins, whatever the order of INSTALLED_APPS.
    """
    admin.autodiscover()
    site = site or admin.site
    added = [model for model in scheduled_models() if not site.is_registered(model)]
    for model in added:
        site.register(model, default_admin_for(model))
    register_calendars(site)
    return added


def register_calendars(site: admin.AdminSite) -> None:
    from scheduling.ops.admin.calendars import CalendarAdmin
    from scheduling.time.calendars.models import Calendar

    if not site.is_registered(Calendar):
        site.register(Calendar, CalendarAdmin)


def default_admin_for(model: type[ScheduledEvent]) -> type[ScheduledEventAdmin]:
    """ScheduledEventAdmin with the model's entities (its foreign keys), fetched in the
    changelist's one query, and its plain fields shown. No filter on entities: a filter lists
    every entity, which for a table of customers or purchases is a page no one can use; a
    sidebar filter for each plain field with a fixed set of values (booleans, choices). Any
    plain field also filters by URL, as in every admin: `?kind=survey`."""
    entities = [field.name for field in entity_fields(model)]
    plain = [field.name for field in plain_fields(model)]
    fixed = [field.name for field in filterable_fields(model) if has_fixed_values(field)]
    event_id, status, due_at, *records = ScheduledEventAdmin.list_display
    attributes: dict[str, Any] = {
        "list_display": (event_id, status, *entities, *plain, due_at, *records),
        "list_select_related": tuple(entities),
        "list_filter": (*ScheduledEventAdmin.list_filter, *fixed),
    }
    return type(f"{model.__name__}Admin", (ScheduledEventAdmin,), attributes)


def has_fixed_values(field: models.Field[Any, Any]) -> bool:
    return bool(field.choices) or isinstance(field, models.BooleanField)
