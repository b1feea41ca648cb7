"""Which database a scheduled model lives on: the alias the host's DATABASE_ROUTERS give for its
writes. The framework's transactions, raw statements, history entries and locks follow it, so a
domain routed to a database of its own is swept, handled and shown there (docs/databases.md).
And the Redis the framework shares with the host: its default cache's."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, ParamSpec, TypeVar

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.db import connections, models, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import QuerySet
from redis import Redis

DEFAULT = "default"
# Bulk writes the framework may lose in a crash without harm (the sweep's claims and marks, the
# purge's deletes; the reasons at CONFIGURE_SWEEP_TRANSACTION in delivery/sweep/sql.py) skip a
# WAL flush per batch; jit off, as their statements are short.
RELAXED_COMMIT = (
    "SELECT set_config('synchronous_commit', 'off', true), set_config('jit', 'off', true)"
)


def database_of(model: type[models.Model]) -> str:
    """The alias `model`'s rows are written on (reads of the sweep and handlers go there too)."""
    return router.db_for_write(model) or DEFAULT


def connection_of(model: type[models.Model]) -> BaseDatabaseWrapper:
    return connections[database_of(model)]


def on_postgresql(using: str) -> bool:
    return connections[using].vendor == "postgresql"


def write_db(rows: QuerySet[Any]) -> str:
    """Where a change to `rows` goes: the alias the caller chose with `.using()`, else the
    router's for writes (a plain queryset's `.db` is the router's for reads, maybe a replica)."""
    chosen: str | None = getattr(rows, "_db", None)
    hints: dict[str, Any] = getattr(rows, "_hints", {})
    return chosen or router.db_for_write(rows.model, **hints) or DEFAULT


P = ParamSpec("P")
R = TypeVar("R")


def atomic_on(model: type[models.Model]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """`@transaction.atomic` on `model`'s database, looked up at each call (the routers are
    not read at import time)."""

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        @wraps(func)
        def in_transaction(*args: P.args, **kwargs: P.kwargs) -> R:
            with transaction.atomic(using=database_of(model)):
                return func(*args, **kwargs)

        return in_transaction

    return decorate


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
