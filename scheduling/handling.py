"""Former path, deprecated: its names now live in `scheduling.delivery.handling.once`, the public ones
in the facade, `scheduling`. Taking a name from here warns; the path goes in
scheduling.FORMER_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.delivery.handling.once import effect_begins, handle_once

__all__ = ["effect_begins", "handle_once"]
__getattr__ = forwarding(__name__)
