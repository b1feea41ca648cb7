"""DATABASE_URL, including libpq's multi-host form for a replicated PostgreSQL.

`postgres://user:password@db1:5432,db2:5432/name?target_session_attrs=read-write` names every
server that may be the primary; libpq tries them in order and keeps the first that accepts
writes, so after a failover a new connection finds the new primary. dj-database-url parses the
rest of the URL; it refuses a host list, so the list is set aside and put back as libpq's
comma-separated `host` and `port` (Django's PostgreSQL backend passes both to libpq as they are).
"""

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from project.env import env_float, env_int

MULTI_HOST_FORM = (
    "postgres://user:password@host1:5432,host2:5432/name?target_session_attrs=read-write"
    " (or sqlite:///path)"
)
DEFAULT_PORT = "5432"
# One entry of a host list: a name, an IPv4 address or a bracketed IPv6 one, then an optional port.
HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s\[\]:/,@]+)(?::(?P<port>[0-9]{1,5}))?")


def database_config(name: str, url: str, **options: Any) -> dict[str, Any]:
    """Django's DATABASES entry for `url`; `options` go to dj_database_url.parse."""
    parts = urlsplit(url)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    servers = [parse_server(name, url, entry) for entry in hosts.split(",")] if "," in hosts else []
    if servers:
        first = f"{userinfo}@{servers[0][0]}" if userinfo else servers[0][0]
        url = urlunsplit(parts._replace(netloc=first))
    try:
        config: dict[str, Any] = dict(dj_database_url.parse(url, **options))
    except ValueError as exc:
        raise invalid(name, url, str(exc) or type(exc).__name__) from None
    if servers:
        config["HOST"] = ",".join(host.strip("[]") for host, _ in servers)
        config["PORT"] = ",".join(port for _, port in servers)
        # Without it libpq keeps the first server that answers, which may be a standby.
        config.setdefault("OPTIONS", {}).setdefault("target_session_attrs", "read-write")
    return config


def replica_config(name: str, url: str, connect_timeout: int) -> dict[str, Any]:
    """A read replica's DATABASES entry (scheduling.rows.replicas). Unless the URL says otherwise,
    a connection prefers a standby of those listed and takes the primary when none answers."""
    config = database_config(name, url, conn_max_age=60, conn_health_checks=True)
    options = config.setdefault("OPTIONS", {})
    options.setdefault("connect_timeout", connect_timeout)
    if "target_session_attrs" not in url:
        options["target_session_attrs"] = "prefer-standby"
    return config


def pool_from_env(databases: dict[str, dict[str, Any]]) -> None:
    """With DATABASE_POOL_MAX_SIZE set (.ci/Procfile's web sets it), requests borrow each
    database's connections from a pool of at most that many (docs/operations.md#connections),
    instead of each server thread keeping one for every client connection it holds open."""
    max_size = env_int("DATABASE_POOL_MAX_SIZE", 0)
    # A few seconds: past it the request answers 503 "busy" (scheduling.ops.busy) while it still
    # matters to its client, rather than a 500 after a minute.
    timeout = env_float("DATABASE_POOL_TIMEOUT", 3.0, maximum=600)
    for config in databases.values():
        pooled(config, max_size, timeout)


def pooled(config: dict[str, Any], max_size: int, timeout: float) -> None:
    """Makes a PostgreSQL entry of DATABASES borrow from a psycopg pool of at most `max_size`
    connections, a request waiting up to `timeout` seconds for one (Django gives it back at the
    request's end: a pool needs CONN_MAX_AGE 0). SQLite (the embedded mode) is left as it is."""
    if not max_size or not config["ENGINE"].endswith("postgresql"):
        return
    config["CONN_MAX_AGE"] = 0
    pool = {"min_size": min(2, max_size), "max_size": max_size, "timeout": timeout}
    config.setdefault("OPTIONS", {})["pool"] = pool


def web_timeouts() -> tuple[float, float]:
    """DATABASE_LOCK_TIMEOUT (5 s) and DATABASE_STATEMENT_TIMEOUT (30 s): how long a web
    request's statement may wait for a lock, and run, on PostgreSQL; 0 turns one off. Past
    either the request answers 503 "busy" with Retry-After (docs/operations.md). Workers, beat,
    sweeps and commands keep the server's values (project/request_timeouts.py)."""
    bounds: dict[str, Any] = {"inclusive": True, "maximum": 3600}
    return (
        env_float("DATABASE_LOCK_TIMEOUT", 5.0, **bounds),
        env_float("DATABASE_STATEMENT_TIMEOUT", 30.0, **bounds),
    )


def parse_server(name: str, url: str, entry: str) -> tuple[str, str]:
    match = HOST_PORT.fullmatch(entry)
    port = (match["port"] or DEFAULT_PORT) if match else ""
    if match is None or not 0 < int(port) < 65536:
        raise invalid(name, url, f"{entry!r} is not host or host:port")
    return match["host"], port


def invalid(name: str, url: str, reason: str) -> ImproperlyConfigured:
    return ImproperlyConfigured(
        f"{name}={hide_password(url)!r} is not valid ({reason}): expected {MULTI_HOST_FORM}."
    )


def hide_password(url: str) -> str:
    parts = urlsplit(url)
    userinfo, at, hosts = parts.netloc.rpartition("@")
    if ":" not in userinfo:
        return url
    user = userinfo.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***{at}{hosts}"))
