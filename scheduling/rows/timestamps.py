"""Timestamps read at the speed of psycopg's C loader, with the values Django's loader gives.

Django registers a timestamptz loader of its own on each psycopg 3 connection (to give every
value its connection's time zone) built on psycopg's pure-Python loader, which parses each
value with regular expressions: some 6 µs a value, a sweep's largest cost after its
statements (an occurrence and its schedule carry several timestamps). `connection_created`
swaps it for one that parses in C, as psycopg's own does when its binary package is
installed, then sets the same time zone as Django's: the same datetime for every value.
Nothing is swapped without that C loader (psycopg 2, or psycopg 3 without psycopg-binary or
psycopg-c), nor where Django's loader was not the one registered.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from functools import lru_cache
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

TIMESTAMPTZ = "timestamptz"


def install() -> None:
    connection_created.connect(use_c_timestamps, dispatch_uid="scheduling.rows.timestamps")


def use_c_timestamps(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    if connection.vendor != "postgresql":
        return
    adapters = getattr(connection.connection, "adapters", None)  # psycopg 3 only
    loader = c_loader()
    if adapters is None or loader is None:
        return
    registered = adapters.get_loader(oid(), text_format())
    if registered is None or not is_djangos(registered):
        return
    adapters.register_loader(TIMESTAMPTZ, zone_loader(loader, registered.timezone))


def is_djangos(loader: type) -> bool:
    from django.db.backends.postgresql.psycopg_any import BaseTzLoader  # type: ignore[import-untyped]

    return issubclass(loader, BaseTzLoader)


@lru_cache(maxsize=1)
def c_loader() -> type | None:
    """psycopg's C timestamptz loader, or None where psycopg 3 runs in pure Python."""
    try:
        import psycopg
    except ImportError:
        return None
    loader: type | None = psycopg.adapters.get_loader(oid(), text_format())
    if loader is None or loader.__module__.startswith("psycopg.types"):
        return None  # the Python one: nothing to gain
    return loader


def oid() -> int:
    from psycopg.postgres import types

    return int(types[TIMESTAMPTZ].oid)


def text_format() -> Any:
    from psycopg.pq import Format

    return Format.TEXT


@lru_cache
def zone_loader(c_class: type, zone: tzinfo | None) -> type:
    """A loader giving `zone` to what the C loader parses, as Django's gives its zone. Django
    reads `timezone` off the connection's loader to decide whether a cursor needs its own."""
    from psycopg.adapt import Loader

    class CTimestampLoader(Loader):
        timezone = zone

        def __init__(self, oid: int, context: Any = None) -> None:
            super().__init__(oid, context)
            self.parse = c_class(oid, context).load

        def load(self, data: Any) -> datetime:
            value: datetime = self.parse(data)
            return value.replace(tzinfo=zone)

    return CTimestampLoader
