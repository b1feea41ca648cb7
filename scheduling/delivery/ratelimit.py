"""Rate limits per scheduled model: the sweep publishes a model's rows no faster than its limit,
whichever sweepers publish them (processes, hosts, slots all draw on one budget).

The budget is a GCRA (a token bucket kept as one "theoretical arrival time"): one key per model
in the lock store's Redis, changed by one Lua script on Redis's own clock, so hosts whose clocks
disagree still share one pace. Without Redis (the embedded mode), or while it is unreachable,
each process keeps the same arithmetic in memory: the limit then holds per process.

A grant holds at most BURST_SECONDS of the limit (at least one row), and is only made once that
much has built up (or all that was asked for), so that a paced backlog goes out in batches of a
tenth of a second's worth rather than a row at a time; over any second, at most the limit plus
one such burst is published.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from django.core.exceptions import ImproperlyConfigured
from redis import Redis
from redis.exceptions import RedisError

from scheduling.rows.conf import RATE_FORM, a_rate
from scheduling.rows.databases import redis_client_for_locks

if TYPE_CHECKING:
    from scheduling.rows.models import ScheduledEvent

log = logging.getLogger(__name__)

BURST_SECONDS = 0.1
PERIOD_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
KEY = "scheduling:ratelimit:{label}"
OVERRIDE_KEY = "scheduling:ratelimit:{label}:override"  # an operator's limit, over the settings
UNLIMITED = "none"  # an override's value that lifts the model's limit
# Rounding in the division must not turn 20 available rows into 19.
EPSILON = 1e-6
OUTAGE_PAUSE = 10.0  # seconds the store is left alone after it failed: each try costs a timeout


def events_per_second(rate: str) -> float:
    """ "500/s" -> 500.0, "10/m" -> 0.1666...: the forms conf.a_rate accepts."""
    count, period = a_rate("rate", rate).split("/")  # a_rate raises, naming the form
    return int(count) / PERIOD_SECONDS[period[0]]


@dataclass(frozen=True)
class Pace:
    per_second: float

    @property
    def interval(self) -> float:
        """Seconds between two events at this pace."""
        return 1.0 / self.per_second

    @property
    def burst(self) -> int:
        return max(1, math.floor(self.per_second * BURST_SECONDS))


@dataclass(frozen=True)
class Grant:
    rows: int  # rows the sweep may claim now
    wait: float = 0.0  # with no rows: seconds until a grant is possible


# --- the arithmetic (mirrored by the Lua script below; tests/unit checks it) --------------------


def take(pace: Pace, tat: float, now: float, want: int) -> tuple[Grant, float]:
    """A grant of up to `want` rows at `now`, and the new theoretical arrival time."""
    interval, tat = pace.interval, max(tat, now)
    tolerance = pace.burst * interval
    available = math.floor((now + tolerance - tat) / interval + EPSILON)
    need = min(want, pace.burst)
    if available < need:
        return Grant(0, wait=tat + need * interval - tolerance - now), tat
    rows = min(want, available)
    return Grant(rows), tat + rows * interval


def give_back(pace: Pace, tat: float, now: float, rows: int) -> float:
    """The arrival time once `rows` granted but not published are returned."""
    return max(tat - rows * pace.interval, now)


# --- the budgets ------------------------------------------------------------------------------


class Budget(Protocol):
    pace: Pace

    def take(self, want: int) -> Grant: ...

    def give_back(self, rows: int) -> None: ...


# KEYS[1]: the model's theoretical arrival time, in microseconds of Redis's clock.
# ARGV: microseconds between events, the burst (rows), rows wanted, rows given back.
# Returns {rows granted, microseconds until a grant is possible}.
GCRA_SCRIPT = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local interval, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local want, back = tonumber(ARGV[3]), tonumber(ARGV[4])
local tat = math.max(tonumber(redis.call('GET', KEYS[1]) or now), now)
local rows = 0
if back > 0 then
  tat = math.max(tat - back * interval, now)
else
  local tolerance = burst * interval
  local available = math.floor((now + tolerance - tat) / interval + 1e-6)
  local need = math.min(want, burst)
  if available < need then
    return {0, math.ceil(tat + need * interval - tolerance - now)}
  end
  rows = math.min(want, available)
  tat = tat + rows * interval
end
if tat > now then
  local ttl = math.ceil((tat - now) / 1000) + 1
  redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', ttl)
else
  redis.call('DEL', KEYS[1])
end
return {rows, 0}
"""


class RedisBudget:
    """One model's budget in Redis, shared by every sweeper that reaches the same Redis."""

    def __init__(self, label: str, pace: Pace, client: Redis) -> None:
        self.key, self.pace, self.client = KEY.format(label=label), pace, client
        self.script = client.register_script(GCRA_SCRIPT)
        self.fallback = LocalBudget(label, pace)

    def take(self, want: int) -> Grant:
        reply = self._run(want=want)
        if reply is None:
            return self.fallback.take(want)
        return Grant(int(reply[0]), wait=int(reply[1]) / 1e6)

    def give_back(self, rows: int) -> None:
        if rows > 0 and self._run(back=rows) is None:
            self.fallback.give_back(rows)

    def _run(self, *, want: int = 0, back: int = 0) -> list[int] | None:
        interval_us = self.pace.interval * 1e6
        if STORE.down(self.client):
            return None
        try:
            reply: list[int] = self.script(
                keys=[self.key], args=[repr(interval_us), self.pace.burst, want, back]
            )
        except RedisError as exc:
            # Delivery goes on at the limit per process rather than stop for the lock store.
            STORE.failed(self.client, exc)
            return None
        return reply


class StoreOutages:
    """Stores that failed lately, by address: each try of one that is away costs a timeout."""

    def __init__(self) -> None:
        self.until: dict[int, float] = {}  # id of the client's pool -> monotonic time to try again

    def down(self, client: Redis) -> bool:
        return time.monotonic() < self.until.get(id(client.connection_pool), 0.0)

    def failed(self, client: Redis, exc: RedisError) -> None:
        log.warning(
            "rate limit store unreachable (%s); limits hold per process for %d s", exc, OUTAGE_PAUSE
        )
        self.until[id(client.connection_pool)] = time.monotonic() + OUTAGE_PAUSE


STORE = StoreOutages()


class LocalBudget:
    """The same arithmetic in this process's memory (the embedded mode, or Redis away)."""

    _guard = threading.Lock()
    _arrivals: dict[str, float] = {}  # label -> theoretical arrival time (monotonic)

    def __init__(self, label: str, pace: Pace) -> None:
        self.label, self.pace = label, pace

    def take(self, want: int) -> Grant:
        with self._guard:
            now = time.monotonic()
            grant, self._arrivals[self.label] = take(
                self.pace, self._arrivals.get(self.label, now), now, want
            )
            return grant

    def give_back(self, rows: int) -> None:
        with self._guard:
            now = time.monotonic()
            tat = self._arrivals.get(self.label, now)
            self._arrivals[self.label] = give_back(self.pace, tat, now, rows)


def budget_for(model: type[ScheduledEvent]) -> Budget | None:
    """The model's budget as now configured; None when it is unlimited."""
    per_second = current_limit(model)
    if per_second is None:
        return None
    label, pace = model._meta.label_lower, Pace(per_second)
    client = redis_client_for_locks()
    return RedisBudget(label, pace, client) if client is not None else LocalBudget(label, pace)


# --- the limit in force -----------------------------------------------------------------------


def current_limit(model: type[ScheduledEvent]) -> float | None:
    """Events per second the sweep publishes at most for `model` now; None: unlimited.

    An operator's override (`manage.py scheduling_rate_limit`) if one is set, else
    SCHEDULING_RATE_LIMITS, else the model's `rate_limit`. Read at every sweep.
    """
    rate = override_of(model)
    if rate is None:
        rate = model.get_rate_limit()
    elif rate == UNLIMITED:
        return None
    return None if rate is None else events_per_second(rate)


def override_of(model: type[ScheduledEvent]) -> str | None:
    """The operator's override: a rate, UNLIMITED, or None where none is set (or no store)."""
    client = redis_client_for_locks()
    if client is None or STORE.down(client):
        return None
    try:
        value = client.get(OVERRIDE_KEY.format(label=model._meta.label_lower))
    except RedisError as exc:
        STORE.failed(client, exc)
        return None
    return None if value is None else checked_override(model, bytes(value))


def checked_override(model: type[ScheduledEvent], stored: bytes) -> str | None:
    """A stored override as a rate or UNLIMITED; anything else (written by hand, or before the
    bounds) is refused with a log line, and the model's configured limit applies."""
    text = stored.decode(errors="replace")
    if text == UNLIMITED:
        return text
    try:
        return a_rate("rate", text)
    except ImproperlyConfigured:
        log.error(
            "rate limit override of %s refused: %r is not a rate (%s); the configured limit "
            "applies until `manage.py scheduling_rate_limit %s --clear` or a new rate",
            model._meta.label,
            text[:40],
            RATE_FORM,
            model._meta.label,
        )
        return None


def set_override(model: type[ScheduledEvent], rate: str | None) -> None:
    """Sets the operator's override for every sweeper at once: a rate, or UNLIMITED; None
    removes it (the settings' limit applies again). Raises where there is no Redis."""
    client = redis_client_for_locks()
    if client is None:
        raise RedisError("the default cache is not Redis: there is no shared store to set it in")
    key = OVERRIDE_KEY.format(label=model._meta.label_lower)
    if rate is None:
        client.delete(key)
    else:
        client.set(key, rate if rate == UNLIMITED else a_rate("rate", rate))
