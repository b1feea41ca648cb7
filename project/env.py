"""Typed readers for settings that come from the environment.

Each refuses a bad value with ImproperlyConfigured naming the variable and the accepted form.
"""

import math
import os
import re
from urllib.parse import parse_qsl, urlencode, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _refuse(name: str, raw: str, expected: str) -> ImproperlyConfigured:
    return ImproperlyConfigured(f"{name}={raw!r} is not valid: expected {expected}.")


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    if raw.strip().lower() in _TRUE:
        return True
    if raw.strip().lower() in _FALSE:
        return False
    raise _refuse(name, raw, "one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise _refuse(name, raw, f"an integer >= {minimum}") from None
    if value < minimum:
        raise _refuse(name, raw, f"an integer >= {minimum}")
    return value


def env_float(name: str, default: float, *, minimum: float = 0.0, inclusive: bool = False) -> float:
    raw = os.environ.get(name)
    if raw is None:
        return default
    expected = f"a number {'>=' if inclusive else '>'} {minimum} (seconds)"
    try:
        value = float(raw)
    except ValueError:
        raise _refuse(name, raw, expected) from None
    if not math.isfinite(value) or value < minimum or (value == minimum and not inclusive):
        raise _refuse(name, raw, expected)
    return value


def env_url(name: str, default: str, *, schemes: tuple[str, ...]) -> str:
    raw = os.environ.get(name, default)
    scheme = urlsplit(raw).scheme
    if scheme not in schemes:
        accepted = ", ".join(f"{s}://..." for s in schemes)
        raise _refuse(name, raw, f"a URL of the form {accepted}")
    return raw


RATE = re.compile(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)")


def env_rate(name: str, default: str) -> str:
    """A DRF throttle rate: a number of requests per second, minute, hour or day."""
    raw = os.environ.get(name, default)
    if not RATE.fullmatch(raw.strip()):
        raise _refuse(name, raw, "<requests>/<period>, e.g. 60/min, 10/s, 1000/hour or 5000/day")
    return raw.strip()


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def redis_database(url: str, offset: int) -> str:
    """The same Redis server's database `offset` places after the one `url` names (mod 16).

    redis:// and rediss:// name it in the path, unix:// (a socket path) in `?db=`.
    """
    parts = urlsplit(url)
    if parts.scheme == "unix":
        query = dict(parse_qsl(parts.query))
        query["db"] = str((int(query.get("db", "0") or 0) + offset) % 16)
        return f"unix://{parts.netloc}{parts.path}?{urlencode(query)}"
    number = parts.path.strip("/")
    current = int(number) if number.isdigit() else 0
    return parts._replace(path=f"/{(current + offset) % 16}").geturl()
