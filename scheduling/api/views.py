"""Former path, deprecated: import from `scheduling.api`. Taking a name from here warns; the
path goes in scheduling.DEPRECATED_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.ops.api.views import ScheduledEventViewSet

__all__ = ["ScheduledEventViewSet"]
__getattr__ = forwarding(__name__)
