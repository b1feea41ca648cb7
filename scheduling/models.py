from scheduling.base import ScheduledEvent, ScheduledEventQuerySet, Status

__all__ = ["ScheduledEvent", "ScheduledEventQuerySet", "Status"]
