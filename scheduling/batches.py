"""Former path, deprecated: its names now live in `scheduling.delivery.handling.batches`, the public ones
in the facade, `scheduling`. Taking a name from here warns; the path goes in
scheduling.FORMER_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.delivery.handling.batches import handle_batch

__all__ = ["handle_batch"]
__getattr__ = forwarding(__name__)
