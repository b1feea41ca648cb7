"""Former path, deprecated: its names now live in `scheduling.rows.history`, the public ones
in the facade, `scheduling`. Taking a name from here warns; the path goes in
scheduling.FORMER_PATHS_END."""

from scheduling import forwarding

__getattr__ = forwarding(__name__)
