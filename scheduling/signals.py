"""Former path, deprecated: import from the facade, `scheduling` (its names live in
`scheduling.delivery.handling.signals`). Taking a name from here warns; the path goes in
scheduling.DEPRECATED_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.delivery.handling.signals import event_failed, event_gave_up

__all__ = ["event_failed", "event_gave_up"]
__getattr__ = forwarding(__name__)
