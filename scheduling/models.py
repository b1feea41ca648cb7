from scheduling.base import ScheduledEvent, ScheduledEventQuerySet, Status

__all__ = [
    "RecurringSchedule",
    "ScheduledEvent",
    "ScheduledEventQuerySet",
    "ScheduledOccurrence",
    "Status",
]
from scheduling.recurring import RecurringSchedule, ScheduledOccurrence
