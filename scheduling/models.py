"""Where Django looks for the app's models: the abstract row every domain subclasses, and the
framework's own tables (a row's history and creation context, stored calendars, delivery
pauses). Each is defined in its wing."""

from scheduling.delivery.pauses.models import DeliveryPause, DeliveryPauseEntry
from scheduling.rows.history.models import EventHistory
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.querysets import ScheduledEventQuerySet
from scheduling.rows.states import Status
from scheduling.rows.tracing.models import CreationContext
from scheduling.time.calendars.models import Calendar

__all__ = [
    "Calendar",
    "CreationContext",
    "DeliveryPause",
    "DeliveryPauseEntry",
    "EventHistory",
    "ScheduledEvent",
    "ScheduledEventQuerySet",
    "Status",
]
