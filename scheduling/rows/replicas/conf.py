"""SCHEDULING_READ_REPLICAS: write alias -> its replica aliases, e.g. {"default": ["replica"]}."""

from __future__ import annotations

import functools
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

NAME = "SCHEDULING_READ_REPLICAS"
FORM = (
    "a dict of write alias to a list of replica aliases, each a PostgreSQL database of "
    "DATABASES, e.g. {'default': ['replica']}"
)


@functools.cache
def read_replicas() -> dict[str, tuple[str, ...]]:
    """The validated setting ({} when unset); ImproperlyConfigured names what is wrong. Read
    once (the router asks on every save), again when a test changes it."""
    value = getattr(settings, NAME, {})
    if not isinstance(value, dict):
        raise refused(f"{NAME}={value!r} is not valid")
    return {alias: replicas_of(alias, replicas) for alias, replicas in value.items()}


def replicas_of(alias: object, replicas: object) -> tuple[str, ...]:
    known_database(alias, f"{NAME} names {alias!r} as a write alias")
    entry = f"{NAME}[{alias!r}]"
    if not isinstance(replicas, list | tuple) or not replicas:
        raise refused(f"{entry}={replicas!r} is not valid")
    for replica in replicas:
        known_database(replica, f"{entry} names {replica!r}")
        if replica == alias:
            raise refused(f"{entry} names {alias!r}, its own write alias, as a replica")
    return tuple(replicas)


def known_database(alias: object, what: str) -> None:
    if not isinstance(alias, str) or alias not in settings.DATABASES:
        raise refused(f"{what}, which is not in DATABASES")
    if not settings.DATABASES[alias].get("ENGINE", "").endswith("postgresql"):
        raise refused(f"{what}, which is not PostgreSQL (replicas follow the primary's WAL)")


def refused(what: str) -> ImproperlyConfigured:
    return ImproperlyConfigured(f"{what}: expected {FORM}.")


@receiver(setting_changed)
def forget(setting: str, **kwargs: Any) -> None:
    if setting in (NAME, "DATABASES"):
        read_replicas.cache_clear()


def primary_of(alias: str) -> str:
    """The write alias `alias` is a replica of, or `alias` itself."""
    for write, replicas in read_replicas().items():
        if alias in replicas:
            return write
    return alias


def is_replica(alias: str) -> bool:
    return primary_of(alias) != alias
