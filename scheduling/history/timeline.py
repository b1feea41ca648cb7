"""Former path, deprecated: import from the facade, `scheduling` (its names live in
`scheduling.rows.history.timeline`). Taking a name from here warns; the path goes in
scheduling.DEPRECATED_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.rows.history.timeline import timeline

__all__ = ["timeline"]
__getattr__ = forwarding(__name__)
