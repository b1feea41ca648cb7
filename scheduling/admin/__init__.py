"""Public: what a host needs for its scheduled models' admin pages.

    from scheduling.admin import ScheduledEventAdmin, ScheduledEventInline

Every name here is part of the documented surface (docs: Reference, Admin); the modules behind
it (`scheduling.ops.admin`) are internal and may move.
"""

from scheduling.ops.admin.audit import AuditedAdmin
from scheduling.ops.admin.base import STORABLE_DATETIMES, ScheduledEventAdmin, ScheduledEventInline
from scheduling.ops.admin.sites import SchedulingAdminSite, SchedulingAdminSiteMixin, register
from scheduling.ops.admin.wording import short_duration

__all__ = [
    "STORABLE_DATETIMES",
    "AuditedAdmin",
    "ScheduledEventAdmin",
    "ScheduledEventInline",
    "SchedulingAdminSite",
    "SchedulingAdminSiteMixin",
    "register",
    "short_duration",
]
