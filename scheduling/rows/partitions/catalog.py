"""What PostgreSQL's catalog says of a table's partitions. Every function takes the connection,
so that a model kept in a database of its own is read there."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

BOUND = re.compile(r"FOR VALUES FROM \((.+)\) TO \((.+)\)")

PARTITIONS = """
    SELECT c.relname, pg_get_expr(c.relpartbound, c.oid), c.reltuples::bigint,
        pg_total_relation_size(c.oid)
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = to_regclass(%s)
"""


@dataclass(frozen=True)
class Partition:
    name: str
    lower: datetime | None  # None: MINVALUE (the table's rows from before its conversion)
    upper: datetime | None  # None: MAXVALUE
    default: bool  # the DEFAULT partition: rows no other partition takes
    rows: int  # the planner's estimate (-1: never analysed)
    bytes: int


def on_postgresql(connection: Any) -> bool:
    return bool(connection.vendor == "postgresql")


def quote(connection: Any, name: str) -> str:
    return str(connection.ops.quote_name(name))


def fetch(connection: Any, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def execute(connection: Any, sql: str, params: Any = None) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.rowcount)


def table_is_partitioned(connection: Any, table: str) -> bool:
    if not on_postgresql(connection):
        return False
    rows = fetch(connection, "SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [table])
    return bool(rows) and rows[0][0] == "p"


def partitions_of(connection: Any, table: str) -> list[Partition]:
    """The table's partitions, the DEFAULT one last, the others by lower bound."""
    found = [
        parse(name, bound, rows, size)
        for name, bound, rows, size in fetch(connection, PARTITIONS, [table])
    ]
    return sorted(found, key=lambda p: (p.default, p.lower is not None, p.lower or datetime.min))


def parse(name: str, bound: str, rows: int, size: int) -> Partition:
    match = BOUND.fullmatch(bound)
    if match is None:  # "DEFAULT"
        return Partition(name, None, None, True, rows, size)
    return Partition(name, bound_value(match[1]), bound_value(match[2]), False, rows, size)


def bound_value(text: str) -> datetime | None:
    """'2026-12-01 00:00:00+00' (in the session's zone, UTC under Django) or MINVALUE/MAXVALUE."""
    if text in ("MINVALUE", "MAXVALUE"):
        return None
    return datetime.fromisoformat(text.strip("'"))


def literal(at: datetime | None, absent: str) -> str:
    """A bound as DDL takes it (no parameters there): a quoted ISO 8601 instant, or `absent`."""
    return absent if at is None else f"'{at.isoformat()}'"


def bound_clause(lower: datetime | None, upper: datetime | None) -> str:
    return f"FOR VALUES FROM ({literal(lower, 'MINVALUE')}) TO ({literal(upper, 'MAXVALUE')})"
