"""Former path, deprecated: import from the facade, `scheduling` (its names live in
`scheduling.delivery.metrics`). Taking a name from here warns; the path goes in
scheduling.DEPRECATED_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.delivery.metrics import COUNT_CAP, QuietIdleSweeps, recent_minutes

__all__ = ["COUNT_CAP", "QuietIdleSweeps", "recent_minutes"]
__getattr__ = forwarding(__name__)
