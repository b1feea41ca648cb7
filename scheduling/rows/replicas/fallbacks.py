"""scheduling_replica_fallbacks_total{replica, reason}: safe requests whose reads went to the
primary, counted in the default cache's Redis (best effort, as every counter of
scheduling.delivery.metrics) so that any web process's scrape shows every host's."""

from __future__ import annotations

from scheduling.rows.databases import redis_client_for_locks

FALLBACKS_KEY = "scheduling:metrics:replicas"
UNREACHABLE, BEHIND = "unreachable", "behind"


def count_fallback(replica: str, reason: str) -> None:
    client = redis_client_for_locks()
    if client is None:
        return
    try:
        client.hincrby(FALLBACKS_KEY, f"{replica}:{reason}", 1)
    except Exception:  # best effort, as every counter (scheduling.delivery.metrics)
        return


def fallback_counts() -> dict[tuple[str, str], int] | None:
    """(replica, reason) -> safe requests whose reads went to the primary; None: no store."""
    client = redis_client_for_locks()
    if client is None:
        return None
    try:
        raw = client.hgetall(FALLBACKS_KEY)
    except Exception:  # the store went away since the scrape read it
        return None
    counts = {}
    for name, value in raw.items():
        replica, _, reason = (name.decode() if isinstance(name, bytes) else name).rpartition(":")
        counts[(replica, reason)] = int(value)
    return counts
