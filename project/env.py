"""Typed readers for settings that come from the environment.

Each refuses a bad value with ImproperlyConfigured naming the variable and the accepted form.
"""

import math
import os
import re
import sys
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


def env_int(name: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    expected = (
        f"an integer >= {minimum}" if maximum is None else f"an integer from {minimum} to {maximum}"
    )
    try:
        value = int(raw)
    except ValueError:
        raise _refuse(name, raw, expected) from None
    if value < minimum or (maximum is not None and value > maximum):
        raise _refuse(name, raw, expected)
    return value


def env_port(name: str, default: int) -> int:
    """A TCP port: 1 to 65535."""
    return env_int(name, default, minimum=1, maximum=65535)


def env_float(
    name: str,
    default: float,
    *,
    minimum: float = 0.0,
    inclusive: bool = False,
    maximum: float | None = None,
) -> float:
    raw = os.environ.get(name)
    if raw is None:
        return default
    expected = f"a number {'>=' if inclusive else '>'} {minimum}"
    expected += " (seconds)" if maximum is None else f" and <= {maximum:g} (seconds)"
    try:
        value = float(raw)
    except ValueError:
        raise _refuse(name, raw, expected) from None
    low = value < minimum or (value == minimum and not inclusive)
    if not math.isfinite(value) or low or (maximum is not None and value > maximum):
        raise _refuse(name, raw, expected)
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of `choices` (any case), as `choices` spells it."""
    raw = os.environ.get(name, default)
    spelt = {choice.lower(): choice for choice in choices}
    if raw.strip().lower() in spelt:
        return spelt[raw.strip().lower()]
    raise _refuse(name, raw, f"one of {', '.join(choices)}")


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def env_log_level(name: str, default: str) -> str:
    """A logging level by name: dictConfig's own refusal of another is a traceback."""
    return env_choice(name, default, LOG_LEVELS)


# A module path, then a class name in CapWords: what a dotted path to a class looks like.
CLASS_PATH = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*\.)+[A-Z][A-Za-z0-9_]*")


def env_class_path(name: str, default: str) -> str:
    """The dotted path of a class, judged by its text alone: nothing is imported here (the
    app that uses it imports and checks the class). A module of Python's own library never
    holds one of the project's classes: os.system or this.s are refused unread."""
    raw = os.environ.get(name, default)
    path = raw.strip()
    if CLASS_PATH.fullmatch(path) and path.partition(".")[0] not in sys.stdlib_module_names:
        return path
    raise _refuse(name, raw, f"the dotted path of a class, e.g. {default}")


def env_url(name: str, default: str, *, schemes: tuple[str, ...]) -> str:
    raw = os.environ.get(name, default)
    scheme = urlsplit(raw).scheme
    if scheme not in schemes:
        accepted = ", ".join(f"{s}://..." for s in schemes)
        raise _refuse(name, raw, f"a URL of the form {accepted}")
    return raw


def env_number(name: str, default: float) -> object:
    """A framework setting (SCHEDULING_*) from the environment: the number the text reads as,
    else the text itself. The framework's validation judges it (`manage.py check`, a worker's
    start), naming the setting and the form its kind accepts: one copy of the rules."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    for number in (int, float):
        try:
            return number(raw)
        except ValueError:
            pass
    return raw


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_mapping(name: str, default: dict[str, str | None]) -> dict[str, str | None]:
    """key=value pairs, comma-separated (e.g. purchases.ScheduledPurchase=500/s,trainings.X=10/m);
    a value `none` is None. The framework judges the keys and the values."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    mapping: dict[str, str | None] = {}
    for item in (part.strip() for part in raw.split(",")):
        key, equals, value = item.partition("=")
        if item and not (equals and key.strip() and value.strip()):
            raise _refuse(
                name, raw, "key=value[,key=value...], e.g. app.Model=500/s,app.Other=10/m"
            )
        if item:
            mapping[key.strip()] = None if value.strip().lower() == "none" else value.strip()
    return mapping


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


HOSTPORT = re.compile(r"(?P<host>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(?P<port>[0-9]{1,5})")


def env_hostports(name: str) -> list[tuple[str, int]]:
    """host:port pairs, comma-separated (e.g. the Sentinels of a Redis); empty when unset."""
    raw = os.environ.get(name, "")
    pairs = []
    for item in (part.strip() for part in raw.split(",")):
        match = HOSTPORT.fullmatch(item)
        if item and (match is None or not 0 < int(match["port"]) < 65536):
            raise _refuse(name, raw, "host:port[,host:port...], e.g. 10.0.0.1:26379,10.0.0.2:26379")
        if match:
            pairs.append((match["host"].strip("[]"), int(match["port"])))
    return pairs


def sentinel_location(url: str, master: str) -> str:
    """A redis:// URL for django-redis's Sentinel support: the master's name in place of the
    host (Sentinel reports its address), the database and credentials of `url` kept."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@{master}" if credentials else master
    return parts._replace(netloc=netloc).geturl()


def sentinel_broker_url(url: str, sentinels: list[tuple[str, int]], offset: int) -> str:
    """kombu's Sentinel broker URL: one sentinel:// per Sentinel (`;` between), the database
    `offset` places after the one `url` names, its credentials on the first (kombu reads them
    there)."""
    parts = urlsplit(redis_database(url, offset))
    credentials = parts.netloc.rpartition("@")[0]
    urls = [f"sentinel://{_bracketed(host)}:{port}{parts.path}" for host, port in sentinels]
    if credentials:
        urls[0] = urls[0].replace("sentinel://", f"sentinel://{credentials}@", 1)
    return ";".join(urls)


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host
