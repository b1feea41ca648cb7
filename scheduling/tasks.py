"""Former path, deprecated: import from the facade, `scheduling` (its names live in
`scheduling.delivery.tasks`). Taking a name from here warns; the path goes in
scheduling.DEPRECATED_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.delivery.tasks import EventHandlerTask

__all__ = ["EventHandlerTask"]
__getattr__ = forwarding(__name__)
