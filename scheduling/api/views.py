"""Former path, deprecated: its names now live in `scheduling.ops.api.views`, the public ones
in the facade, `scheduling`. Taking a name from here warns; the path goes in
scheduling.FORMER_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.ops.api.views import ScheduledEventViewSet

__all__ = ["ScheduledEventViewSet"]
__getattr__ = forwarding(__name__)
