"""PostgreSQL array literals for the sweep's one-statement-a-batch writes.

psycopg adapts a list parameter element by element in Python, some microseconds each: the
sweep passes a dozen arrays of a thousand values a batch (ids, due times, successors), where
that was a tenth of an occurrence's cost. The literal is built by `str.join` and cast in the
statement (`%s::bigint[]`). Only for values whose text form needs no quoting: numbers, UUIDs,
booleans, aware datetimes (ISO 8601, no comma, brace, quote or space).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any
from uuid import UUID


def numbers(values: Iterable[object]) -> str:
    """Integers, or UUIDs: their str() forms."""
    return "{" + ",".join(map(str, values)) + "}"


def keys(values: Iterable[Any]) -> str | list[Any]:
    """Primary keys: a literal for integers and UUIDs; any other kind (a text key may hold a
    comma or a quote) as a list, which psycopg adapts itself. Cast either in the statement."""
    values = list(values)
    if all(isinstance(value, int | UUID) and not isinstance(value, bool) for value in values):
        return numbers(values)
    return values


def booleans(values: Iterable[bool]) -> str:
    return "{" + ",".join("t" if value else "f" for value in values) + "}"


def times(values: Iterable[datetime | None]) -> str:
    """Aware datetimes (None: NULL), cast to timestamptz[] in the statement."""
    return "{" + ",".join(_time(value) for value in values) + "}"


def _time(value: datetime | None) -> str:
    if value is None:
        return "NULL"
    if value.tzinfo is None:
        raise ValueError(f"a naive datetime cannot go into a timestamptz array: {value!r}")
    return value.isoformat()
