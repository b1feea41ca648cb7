"""Former path, deprecated: its names now live in `scheduling.rows.history.timeline`, the public ones
in the facade, `scheduling`. Taking a name from here warns; the path goes in
scheduling.FORMER_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.rows.history.timeline import timeline

__all__ = ["timeline"]
__getattr__ = forwarding(__name__)
