"""WAL positions: the primary's after a client's write, a replica's replay, and the record of
each client's last write (the default cache's Redis, or the cache itself, for WRITE_MEMORY).

A position is an LSN as an int (PostgreSQL prints it `hi/lo` in hex). A client's record holds
it as 16 hex digits, so Redis compares two as strings and keeps the larger.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

from django.core.cache import cache
from django.db import connections

from scheduling.rows.databases import redis_client_for_locks

log = logging.getLogger("scheduling.replicas")

# Seconds a client's write is remembered: a replica further behind than this may serve that
# client its older rows (docs/read-replicas.md, "Lag").
WRITE_MEMORY = 600
PREFIX = "scheduling:replicas:written"
PRIMARY_SQL = "SELECT pg_current_wal_lsn()::text"
# A server out of recovery is a primary (a promoted standby, or the primary a multi-host replica
# URL fell back to): it has what it wrote, up to its own current position.
REPLICA_SQL = (
    "SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()"
    " ELSE pg_current_wal_lsn() END)::text"
)
# Two writes of one client may finish in either order: keep the larger position.
KEEP_LARGER = """
local current = redis.call('GET', KEYS[1])
if current and current >= ARGV[1] then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
end
"""


def lsn(text: str | None) -> int:
    """'16/B374D848' -> an int; None (a standby that has replayed nothing yet) -> 0."""
    if not text:
        return 0
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


def primary_position(alias: str) -> int:
    with connections[alias].cursor() as cursor:
        cursor.execute(PRIMARY_SQL)
        return lsn(cursor.fetchone()[0])


def replica_position(alias: str) -> int:
    with connections[alias].cursor() as cursor:
        cursor.execute(REPLICA_SQL)
        return lsn(cursor.fetchone()[0])


class StoreDown(Exception):
    """The record of writes did not answer (logged once per outage)."""


_store_down = threading.Event()


@contextlib.contextmanager
def store_call() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        if not _store_down.is_set():
            log.warning(
                "read replicas: the record of writes is unreachable (%s): writers read the "
                "primary until it answers",
                exc,
            )
        _store_down.set()
        raise StoreDown from exc
    _store_down.clear()


def key(client: str, alias: str) -> str:
    return f"{PREFIX}:{client}:{alias}"


def remember_write(client: str, alias: str, position: int) -> None:
    value = f"{position:016x}"
    redis = redis_client_for_locks()
    with store_call():
        if redis is not None:
            redis.eval(KEEP_LARGER, 1, key(client, alias), value, WRITE_MEMORY)
            return
        # No Redis (a per-process cache): get and set, the larger kept but for a race.
        current = cache.get(key(client, alias))
        cache.set(key(client, alias), max(value, current or value), WRITE_MEMORY)


def written_position(client: str, alias: str) -> int | None:
    """The position of the client's last remembered write on `alias`; None: none remembered.
    StoreDown when the record did not answer."""
    redis = redis_client_for_locks()
    with store_call():
        raw = redis.get(key(client, alias)) if redis is not None else cache.get(key(client, alias))
    value = raw.decode() if isinstance(raw, bytes) else raw
    return None if value is None else int(value, 16)
