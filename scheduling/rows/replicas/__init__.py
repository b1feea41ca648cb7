"""Read replicas for the reads of safe requests (GET, HEAD, OPTIONS): the API's lists and
details, the admin's pages and the operators' dashboard (docs/read-replicas.md).

The host maps each write alias to its replica aliases in SCHEDULING_READ_REPLICAS, puts
`ReplicaRouter` first in DATABASE_ROUTERS and adds `ReplicaReadsMiddleware` to MIDDLEWARE.
Only reads made while the middleware serves a safe request go to a replica; the sweep, workers,
beat, commands and every write keep to the primary. A client that has just written reads from a
replica only once that replica has replayed the primary's WAL past its write.
"""

from scheduling.rows.replicas.checks import check_read_replicas
from scheduling.rows.replicas.middleware import ReplicaReadsMiddleware, reads_primary
from scheduling.rows.replicas.router import ReplicaRouter

__all__ = ["ReplicaReadsMiddleware", "ReplicaRouter", "check_read_replicas", "reads_primary"]
