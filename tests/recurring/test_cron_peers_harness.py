"""The harness that replays the peers' cron test vectors against our cron module.

Each tests/recurring/test_cron_peers_<peer>.py transcribes one peer's own test cases as data
(expression, start, zone, the peer's expected outcome), citing the repository, file and test.
A case we answer differently on purpose is listed in that file's DIFFERENCES with the reason
and what we give instead; the test asserts both that the peer's answer is not ours (so a
difference that disappears is noticed) and that ours is the one documented. docs/cron.md
lists the same differences for readers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

from scheduling.recurring.cron import CronError, fire_times, next_fire, validate

REFUSED = "refused"
ACCEPTED = "accepted"
Outcome = tuple[str, ...] | bool | str


@dataclass(frozen=True)
class Vector:
    """One peer case, named "<peer test>[<expression> @ <start>]". `start` and `fires` are wall times in `tz` (ISO without an offset) or
    instants (with one); `shape` says how a fire time is written: "iso", "day" (the day of the
    month, croniter's range tests) or "year-month" (croniter's "24 2")."""

    name: str
    expression: str
    start: str = ""
    fires: tuple[str, ...] = ()
    tz: str = "UTC"
    kind: str = "next"  # next | match | nomatch | never | refused | accepted
    shape: str = "iso"


@dataclass(frozen=True)
class Difference:
    reason: str
    ours: Outcome


def nxt(test: str, expression: str, start: str, *fires: str, tz: str = "UTC") -> Vector:
    return Vector(f"{test}[{expression} @ {start}]", expression, start, fires, tz)


def shaped(test: str, expression: str, start: str, shape: str, fires: Iterable[str]) -> Vector:
    name = f"{test}[{expression} @ {start}]"
    return Vector(name, expression, start, tuple(fires), shape=shape)


def match(test: str, expression: str, instant: str, tz: str = "UTC") -> Vector:
    return Vector(
        f"{test}[{expression} matches {instant}]", expression, instant, tz=tz, kind="match"
    )


def nomatch(test: str, expression: str, instant: str, tz: str = "UTC") -> Vector:
    name = f"{test}[{expression} does not match {instant}]"
    return Vector(name, expression, instant, tz=tz, kind="nomatch")


def never(test: str, expression: str, start: str) -> Vector:
    return Vector(f"{test}[{expression} @ {start}]", expression, start, kind="never")


def refused(test: str, expression: str) -> Vector:
    return Vector(f"{test}[{expression}]", expression, kind="refused")


def accepted(test: str, expression: str) -> Vector:
    return Vector(f"{test}[{expression}]", expression, kind="accepted")


def peer_outcome(vector: Vector) -> Outcome:
    outcomes: dict[str, Outcome] = {
        "next": vector.fires,
        "match": True,
        "nomatch": False,
        "never": (),
        "refused": REFUSED,
        "accepted": ACCEPTED,
    }
    return outcomes[vector.kind]


def our_outcome(vector: Vector) -> Outcome:
    try:
        validate(vector.expression, vector.tz)
    except CronError:
        return REFUSED
    if vector.kind in ("refused", "accepted"):
        return ACCEPTED
    start = _instant(vector.start, vector.tz)
    if vector.kind in ("match", "nomatch"):
        return next_fire(vector.expression, start - timedelta(seconds=1), vector.tz) == start
    count = 1 if vector.kind == "never" else len(vector.fires)
    times = islice(fire_times(vector.expression, start, vector.tz), count)
    return tuple(_written(time, vector) for time in times)


def check(vector: Vector, differences: dict[str, Difference]) -> None:
    ours = our_outcome(vector)
    difference = differences.get(vector.name)
    if difference is None:
        assert ours == peer_outcome(vector)
    else:
        assert ours != peer_outcome(vector), "the difference is gone: drop it from DIFFERENCES"
        assert ours == difference.ours


def check_table(vectors: list[Vector], differences: dict[str, Difference]) -> None:
    names = [vector.name for vector in vectors]
    assert len(names) == len(set(names)), "vector names are the DIFFERENCES keys: keep unique"
    assert set(differences) <= set(names), "a DIFFERENCES entry names no vector"
    assert all(difference.reason for difference in differences.values())


def _instant(text: str, tz: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=ZoneInfo(tz))


def _written(time: datetime, vector: Vector) -> str:
    local = time.astimezone(ZoneInfo(vector.tz))
    if vector.shape == "day":
        return str(local.day)
    if vector.shape == "year-month":
        return f"{local.year % 100} {local.month}"
    with_offset = bool(vector.fires) and datetime.fromisoformat(vector.fires[0]).tzinfo
    return local.isoformat() if with_offset else local.replace(tzinfo=None).isoformat()
