"""Former path, deprecated: import from the facade, `scheduling` (its names live in
`scheduling.rows.history`). Taking a name from here warns; the path goes in
scheduling.DEPRECATED_PATHS_END."""

from scheduling import forwarding

__getattr__ = forwarding(__name__)
