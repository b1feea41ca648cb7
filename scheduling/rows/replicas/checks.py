"""The system check of SCHEDULING_READ_REPLICAS, and of the two settings that enable it."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from scheduling.rows.replicas.conf import NAME, read_replicas
from scheduling.rows.replicas.middleware import ReplicaReadsMiddleware
from scheduling.rows.replicas.router import ReplicaRouter

ROUTER = "scheduling.ReplicaRouter"
MIDDLEWARE = "scheduling.ReplicaReadsMiddleware"


@register()
def check_read_replicas(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    try:
        configured = read_replicas()
    except ImproperlyConfigured as refusal:
        return [Error(str(refusal), id="scheduling.E010")]
    if not configured:
        return []
    return [Warning(problem, id="scheduling.W010") for problem in not_enabled()]


def not_enabled() -> list[str]:
    problems = []
    routers = settings.DATABASE_ROUTERS
    if not routers or not is_replica_router(routers[0]):
        problems.append(
            f"{NAME} is set, but DATABASE_ROUTERS does not start with {ROUTER!r}: no read goes "
            "to a replica (another router first would decide every read itself)."
        )
    if not any(names(entry, ReplicaReadsMiddleware) for entry in settings.MIDDLEWARE):
        problems.append(
            f"{NAME} is set, but MIDDLEWARE does not list {MIDDLEWARE!r}: no request reads from "
            "a replica."
        )
    return problems


def is_replica_router(entry: object) -> bool:
    if isinstance(entry, str):
        return names(entry, ReplicaRouter)
    return isinstance(entry, ReplicaRouter)


def names(path: str, wanted: type) -> bool:
    """Whether a dotted path names `wanted`, by whichever path (the facade's, the module's, a
    former one)."""
    if path.rsplit(".", 1)[-1] != wanted.__name__:
        return False  # not imported: a host's own router or middleware may be slow to load
    try:
        return bool(import_string(path) is wanted)
    except ImportError:
        return False
