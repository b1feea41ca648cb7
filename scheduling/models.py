from scheduling.base import ScheduledEvent, ScheduledEventQuerySet, Status

__all__ = [
    "Job",
    "RecurringSchedule",
    "ScheduledEvent",
    "ScheduledEventQuerySet",
    "ScheduledJobRun",
    "ScheduledOccurrence",
    "Status",
]
from scheduling.jobs import Job, ScheduledJobRun
from scheduling.recurring import RecurringSchedule, ScheduledOccurrence
