"""Former path, deprecated: its names now live in `scheduling.rows.replicas`, the public ones
in the facade, `scheduling`. Taking a name from here warns; the path goes in
scheduling.FORMER_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.rows.replicas import ReplicaReadsMiddleware, ReplicaRouter

__all__ = ["ReplicaReadsMiddleware", "ReplicaRouter"]
__getattr__ = forwarding(__name__)
