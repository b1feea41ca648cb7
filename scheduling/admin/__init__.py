"""The admin for scheduled models: building blocks (base.py) and the default registration
(defaults.py) that lists every scheduled model a host has not registered itself."""

from scheduling.admin.audit import AuditedAdmin
from scheduling.admin.base import (
    STORABLE_DATETIMES,
    ScheduledEventAdmin,
    ScheduledEventInline,
    rows_changed,
)

__all__ = [
    "STORABLE_DATETIMES",
    "AuditedAdmin",
    "ScheduledEventAdmin",
    "ScheduledEventInline",
    "rows_changed",
]
