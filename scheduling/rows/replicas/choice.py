"""Which replica serves a safe request's reads of one write alias, chosen once per request.

A replica is skipped while it is unreachable (tried again after RETRY_AFTER seconds, logged
once per outage) and, for a client with a remembered write, until it has replayed past that
write. With none left the reads go to the primary, counted in
scheduling_replica_fallbacks_total{replica, reason}.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from dataclasses import dataclass, field

from django.db import DatabaseError, connections
from django.http import HttpRequest

from scheduling.rows.replicas.conf import read_replicas
from scheduling.rows.replicas.fallbacks import BEHIND, UNREACHABLE, count_fallback
from scheduling.rows.replicas.positions import StoreDown, replica_position, written_position

log = logging.getLogger("scheduling.replicas")

RETRY_AFTER = 10.0  # seconds an unreachable replica is left alone before the next try

_down: dict[str, float] = {}  # replica alias -> when to try it again (time.monotonic)
_down_guard = threading.Lock()


@dataclass
class ReadState:
    """One safe request's choices; `enabled` off for views marked `reads_primary`."""

    request: HttpRequest
    enabled: bool = True
    chosen: dict[str, str | None] = field(default_factory=dict)

    def replica_for(self, write_alias: str) -> str | None:
        if not self.enabled:
            return None
        if write_alias not in self.chosen:
            self.chosen[write_alias] = None  # reads made while choosing go to the primary
            self.chosen[write_alias] = choose(write_alias, client_of(self.request))
        return self.chosen[write_alias]


def client_of(request: HttpRequest) -> str | None:
    """Whose writes the request must see: the signed-in user's (DRF sets request.user too)."""
    user = getattr(request, "user", None)
    return str(user.pk) if user is not None and user.is_authenticated else None


def choose(write_alias: str, client: str | None) -> str | None:
    configured = read_replicas().get(write_alias, ())
    if not configured:  # a database with no replica (another router put the model there)
        return None
    try:
        needed = written_position(client, write_alias) if client else None
    except StoreDown:  # the client's writes may be anywhere
        return None
    reason = UNREACHABLE
    for alias in random.sample(configured, len(configured)):
        if resting(alias) or not reachable_now(alias):
            continue
        if needed is None or caught_up(alias, needed):
            return alias
        reason = BEHIND
    count_fallback(configured[0], reason)
    return None


def caught_up(alias: str, needed: int) -> bool:
    try:
        return replica_position(alias) >= needed
    except DatabaseError as exc:
        went_down(alias, exc)
        return False


def reachable_now(alias: str) -> bool:
    connection = connections[alias]
    try:
        connection.close_if_health_check_failed()
        connection.ensure_connection()
    except DatabaseError as exc:
        went_down(alias, exc)
        return False
    came_back(alias)
    return True


def resting(alias: str) -> bool:
    return _down.get(alias, 0.0) > time.monotonic()


def went_down(alias: str, exc: Exception) -> None:
    with _down_guard:
        first = alias not in _down
        _down[alias] = time.monotonic() + RETRY_AFTER
    if first:
        log.warning(
            "read replica %r is unreachable (%s): its reads go to the primary, tried again "
            "every %g s",
            alias,
            str(exc).strip() or type(exc).__name__,
            RETRY_AFTER,
        )
    with contextlib.suppress(DatabaseError):
        connections[alias].close()


def came_back(alias: str) -> None:
    with _down_guard:
        was_down = _down.pop(alias, None) is not None
    if was_down:
        log.info("read replica %r answers again", alias)
