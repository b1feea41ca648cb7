"""The admin for scheduled models: building blocks (base.py), the default registration
(defaults.py) that lists every scheduled model a host has not registered itself, and the
framework's admin on a host's own AdminSite (sites.py: `register(site)`,
SchedulingAdminSiteMixin)."""

from scheduling.ops.admin.audit import AuditedAdmin
from scheduling.ops.admin.base import (
    STORABLE_DATETIMES,
    ScheduledEventAdmin,
    ScheduledEventInline,
    rows_changed,
)
from scheduling.ops.admin.sites import SchedulingAdminSite, SchedulingAdminSiteMixin, register

__all__ = [
    "STORABLE_DATETIMES",
    "AuditedAdmin",
    "ScheduledEventAdmin",
    "ScheduledEventInline",
    "SchedulingAdminSite",
    "SchedulingAdminSiteMixin",
    "register",
    "rows_changed",
]
