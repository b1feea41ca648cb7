"""The sweep lock: one holder per model and slot, so sweeps do not queue up on row locks.

It saves work; it is not what makes delivery correct (FOR UPDATE SKIP LOCKED is). So when
the lock store is unreachable a sweep goes ahead without it and says so in the log.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Protocol

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from redis import Redis
from redis.exceptions import LockError, RedisError

log = logging.getLogger(__name__)


class SweepLock(Protocol):
    name: str

    def acquire(self) -> bool: ...

    def extend(self) -> bool: ...

    def release(self) -> None: ...


class RedisSweepLock:
    """redis-py's Lock: a random token per holder, SET NX PX, Lua compare-and-pexpire/delete."""

    def __init__(self, name: str, ttl: float, client: Redis) -> None:
        self.name = name
        self.ttl = ttl
        self.degraded = False
        self._lock = client.lock(name, timeout=ttl, blocking=False, thread_local=False)

    def acquire(self) -> bool:
        try:
            return bool(self._lock.acquire(blocking=False))
        except RedisError as exc:
            log.warning("lock store unreachable (%s); sweeping %s without the lock", exc, self.name)
            self.degraded = True
            return True

    def extend(self) -> bool:
        if self.degraded:
            return True
        try:
            return bool(self._lock.extend(self.ttl, replace_ttl=True))
        except (LockError, RedisError) as exc:
            log.warning("lost the lock %s (%s); stopping after this batch", self.name, exc)
            return False

    def release(self) -> None:
        if self.degraded:
            return
        try:
            self._lock.release()
        except (LockError, RedisError) as exc:
            log.info("lock %s was not ours to release (%s)", self.name, exc)


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

    def extend(self) -> bool:
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


def redis_client_for_locks() -> Redis | None:
    """The default cache's Redis client (django-redis, or Django's own RedisCache); None when
    the default cache is not Redis (the embedded mode: an in-process lock)."""
    backend = caches["default"]
    if isinstance(backend, DjangoRedisCache):
        client: Redis = backend._cache.get_client(write=True)  # type: ignore[attr-defined]
        return client
    if type(backend).__module__.startswith("django_redis"):
        from django_redis import get_redis_connection

        connection: Redis = get_redis_connection("default")
        return connection
    return None
