"""The request being served, if it may read from replicas: set by ReplicaReadsMiddleware for
safe requests only, read by ReplicaRouter. Anything else (the sweep, workers, beat, commands,
unsafe requests) runs with none set, so its reads never leave the primary."""

from __future__ import annotations

from contextvars import ContextVar

from scheduling.rows.replicas.choice import ReadState

serving: ContextVar[ReadState | None] = ContextVar("scheduling_replica_reads", default=None)


def current_state() -> ReadState | None:
    return serving.get()
