"""Former path, deprecated: import from the facade, `scheduling` (its names live in
`scheduling.delivery.handling.once`). Taking a name from here warns; the path goes in
scheduling.DEPRECATED_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.delivery.handling.once import effect_begins, handle_once

__all__ = ["effect_begins", "handle_once"]
__getattr__ = forwarding(__name__)
