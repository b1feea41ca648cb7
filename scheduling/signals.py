"""Former path, deprecated: its names now live in `scheduling.delivery.handling.signals`, the public ones
in the facade, `scheduling`. Taking a name from here warns; the path goes in
scheduling.FORMER_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.delivery.handling.signals import event_failed, event_gave_up

__all__ = ["event_failed", "event_gave_up"]
__getattr__ = forwarding(__name__)
