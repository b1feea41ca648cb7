"""Iterative checks on parsed JSON, safe at any nesting depth (no recursion)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def _walk(value: Any) -> Iterator[tuple[Any, int]]:
    """Every value and key in a JSON value, with its depth (the top value is at 1)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        yield item, depth
        if isinstance(item, dict):
            stack.extend((key, depth + 1) for key in item)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)


def json_depth(value: Any) -> int:
    return max(depth for _, depth in _walk(value))


def json_has_nul(value: Any) -> bool:
    """PostgreSQL's jsonb and text refuse the NUL character, in keys and strings alike."""
    return any(isinstance(item, str) and "\x00" in item for item, _ in _walk(value))
