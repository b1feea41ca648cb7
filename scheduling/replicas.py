"""Former path, deprecated: import from the facade, `scheduling` (its names live in
`scheduling.rows.replicas`). Taking a name from here warns; the path goes in
scheduling.DEPRECATED_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.rows.replicas import ReplicaReadsMiddleware, ReplicaRouter

__all__ = ["ReplicaReadsMiddleware", "ReplicaRouter"]
__getattr__ = forwarding(__name__)
