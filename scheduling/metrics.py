"""Former path, deprecated: its names now live in `scheduling.delivery.metrics`, the public ones
in the facade, `scheduling`. Taking a name from here warns; the path goes in
scheduling.FORMER_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.delivery.metrics import COUNT_CAP, QuietIdleSweeps, recent_minutes

__all__ = ["COUNT_CAP", "QuietIdleSweeps", "recent_minutes"]
__getattr__ = forwarding(__name__)
