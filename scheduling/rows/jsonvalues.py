"""Checks on parsed JSON, safe at any nesting depth (no recursion).

`check_json_value` is the one rule every payload follows (a keyed job's payload and labels, a
recurring schedule's payload template, any JSON field of the API): what PostgreSQL's jsonb, the
broker's serialiser and a consumer in another language all accept, each refusal naming where.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

import orjson

from scheduling.rows.outgoing import dumps

# Levels of a payload, its top object counting as one; the broker's serialiser gives up near
# 254, and a schedule's payload has no use for more than a few.
MAX_PAYLOAD_DEPTH = 32
# Signed 64 bits: what the broker's serialiser and most consumers' JSON parsers can hold.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]{1,100}")
WHOLE_CHARACTERS = (
    "enter text of whole characters (valid UTF-8; a character beyond U+FFFF as one surrogate "
    "pair, e.g. \\ud83d\\ude00)"
)


class JsonValueError(ValueError):
    """A value that cannot be stored or sent; the message names where (e.g. payload.a[0].b)
    and the accepted form."""


def _walk(value: Any, path: str = "") -> Iterator[tuple[Any, int, str, bool]]:
    """Every value and key in a JSON value: (item, depth, path, is_key); the top is at 1."""
    stack: list[tuple[Any, int, str, bool]] = [(value, 1, path, False)]
    while stack:
        item, depth, where, is_key = stack.pop()
        yield item, depth, where, is_key
        if isinstance(item, dict):
            for key, child in item.items():
                inner = _child_path(where, key)
                stack.append((key, depth + 1, inner, True))
                stack.append((child, depth + 1, inner, False))
        elif isinstance(item, list):
            stack.extend((child, depth + 1, f"{where}[{i}]", False) for i, child in enumerate(item))


def _child_path(path: str, key: object) -> str:
    # A key that is not plain is written as a JSON string with every odd character escaped, so
    # the message that names it can always be sent back (a lone surrogate cannot).
    text = key if isinstance(key, str) and PLAIN_KEY.fullmatch(key) else None
    return f"{path}.{text}" if text else f"{path}[{json.dumps(str(key)[:100])}]"


def json_depth(value: Any) -> int:
    return max(depth for _, depth, _, _ in _walk(value))


def has_lone_surrogate(text: str) -> bool:
    """A "\\ud800" escape with no pair: Python holds it, UTF-8 (PostgreSQL, the broker) cannot."""
    if text.isascii():
        return False
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


def check_json_value(
    value: Any, *, path: str, max_depth: int = MAX_PAYLOAD_DEPTH, max_bytes: int | None = None
) -> bytes:
    """The value as the compact JSON the broker sends; JsonValueError names the first part
    (keys included) that PostgreSQL's jsonb, the broker or a consumer could not take."""
    for item, depth, where, is_key in _walk(value, path):
        if depth > max_depth:
            raise JsonValueError(
                f"{where}: nested too deeply; enter JSON nested at most {max_depth} levels deep."
            )
        problem = _problem(item, is_key)
        if problem:
            raise JsonValueError(f"{where}: {problem}.")
    try:
        data = dumps(value)
    except (orjson.JSONEncodeError, TypeError) as exc:  # what the walk above does not foresee
        raise JsonValueError(f"{path}: enter JSON the broker can send: {exc}.") from None
    if max_bytes is not None and len(data) > max_bytes:
        raise JsonValueError(f"{path}: at most {max_bytes} bytes of JSON; got {len(data)}.")
    return data


def _problem(item: Any, is_key: bool) -> str | None:
    what = "a key" if is_key else "a string"
    if isinstance(item, str):
        if "\x00" in item:
            return f"null characters (\\u0000) are not allowed in {what}"
        if has_lone_surrogate(item):
            return f"{what} holds a lone surrogate; {WHOLE_CHARACTERS}"
    elif isinstance(item, bool) or item is None:
        return None
    elif isinstance(item, int) and not INT_MIN <= item <= INT_MAX:
        return f"enter an integer from {INT_MIN} to {INT_MAX} (signed 64 bits), or a string"
    elif isinstance(item, float) and not math.isfinite(item):
        return "enter a finite number (at most about 1.8e308), or a string"
    return None
