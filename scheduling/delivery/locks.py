"""The sweep lock: one holder per model and slot, so sweeps do not queue up on row locks.

It saves work; it is not what makes delivery correct (FOR UPDATE SKIP LOCKED is). So when
the lock store is unreachable a sweep goes ahead without it and says so in the log.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any, Protocol

from redis import Redis
from redis.exceptions import LockError, RedisError

from scheduling.rows.databases import redis_client_for_locks

log = logging.getLogger(__name__)


class SweepLock(Protocol):
    name: str

    def acquire(self) -> bool: ...

    def extend(self, *, lazily: bool = False) -> bool: ...

    def release(self) -> None: ...


class RedisSweepLock:
    """redis-py's Lock: a random token per holder, SET NX PX, Lua compare-and-pexpire/delete."""

    # Locks of this process whose release failed (the store went away mid-sweep, e.g. a Sentinel
    # failover): lock name -> our token. A replica promoted meanwhile has the key, so without
    # this every sweeper, this one included, would be locked out until the TTL ran out.
    _unreleased: dict[str, Any] = {}  # the token as redis-py keeps it (bytes)
    _guard = threading.Lock()

    def __init__(self, name: str, ttl: float, client: Redis) -> None:
        self.name = name
        self.ttl = ttl
        self.degraded = False
        self._lock = client.lock(name, timeout=ttl, blocking=False, thread_local=False)
        self._fresh_until = 0.0  # monotonic: until then the key has most of its TTL left

    def acquire(self) -> bool:
        try:
            self._release_leftover()
            acquired = bool(self._lock.acquire(blocking=False))
        except RedisError as exc:
            log.warning("lock store unreachable (%s); sweeping %s without the lock", exc, self.name)
            self.degraded = True
            return True
        if acquired:
            self._set_fresh()
        return acquired

    def extend(self, *, lazily: bool = False) -> bool:
        # `lazily`: a holding sweep's wake, five times a second. Within a quarter of the TTL of
        # the last extension the key cannot have expired, so no round trip is made (a key lost
        # to the store's failure is seen by the next batch's extension, which always asks).
        if self.degraded or (lazily and time.monotonic() < self._fresh_until):
            return True
        try:
            extended = bool(self._lock.extend(self.ttl, replace_ttl=True))
        except (LockError, RedisError) as exc:
            log.warning("lost the lock %s (%s); stopping after this batch", self.name, exc)
            return False
        if extended:
            self._set_fresh()
        return extended

    def _set_fresh(self) -> None:
        self._fresh_until = time.monotonic() + self.ttl / 4

    def release(self) -> None:
        self._fresh_until = 0.0
        if self.degraded:
            return
        token = self._lock.local.token
        try:
            self._lock.release()
        except LockError as exc:
            log.info("lock %s was not ours to release (%s)", self.name, exc)
        except RedisError as exc:
            log.warning(
                "could not release the lock %s (%s); releasing it next time", self.name, exc
            )
            if token is not None:
                with self._guard:
                    self._unreleased[self.name] = token

    def _release_leftover(self) -> None:
        """Deletes the key our failed release left, if it still holds our token (and only then:
        after its TTL it may be another holder's)."""
        with self._guard:
            token = self._unreleased.pop(self.name, None)
        if token is None:
            return
        try:
            self._lock.do_release(token)
        except LockError:
            pass  # expired, or never reached the promoted replica: nothing of ours is left
        except RedisError:
            with self._guard:
                self._unreleased.setdefault(self.name, token)
            raise


class LocalSweepLock:
    """The embedded mode's lock: the same contract within one process."""

    _guard = threading.Lock()
    _held: dict[str, tuple[str, float]] = {}

    def __init__(self, name: str, ttl: float) -> None:
        self.name = name
        self.ttl = ttl
        self.token = uuid.uuid4().hex

    def acquire(self) -> bool:
        with self._guard:
            holder = self._held.get(self.name)
            if holder and holder[1] > time.monotonic():
                return False
            self._held[self.name] = (self.token, time.monotonic() + self.ttl)
            return True

    def extend(self, *, lazily: bool = False) -> bool:
        with self._guard:
            if self._held.get(self.name, ("", 0.0))[0] != self.token:
                return False
            self._held[self.name] = (self.token, time.monotonic() + self.ttl)
            return True

    def release(self) -> None:
        with self._guard:
            if self._held.get(self.name, ("", 0.0))[0] == self.token:
                del self._held[self.name]


def sweep_lock(name: str, ttl: float) -> SweepLock:
    client = redis_client_for_locks()
    if client is not None:
        return RedisSweepLock(name, ttl, client)
    return LocalSweepLock(name, ttl)
