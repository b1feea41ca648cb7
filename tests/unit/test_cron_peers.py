"""The peers' own cron test vectors, replayed against our cron package.

tests/unit/cron_vectors/<peer>.json transcribes one peer's test cases as data (Quartz,
croniter, cronsim, cron-utils): its "about" cites the repository and files, each group's
"note" the test it comes from, and each vector gives the expression, the start, the zone and
the peer's expected outcome. A case we answer differently on purpose is listed in the file's
"differences" with the reason and what we give instead; the test asserts both that the peer's
answer is not ours (so a difference that disappears is noticed) and that ours is the one
documented. docs/cron.md lists the same differences for readers.

Pure: no database, no broker.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import islice, product
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from cronsim import CronSim, CronSimError

from scheduling.recurring.cron import CronError, fire_times, next_fire, validate

VECTORS_DIR = Path(__file__).parent / "cron_vectors"
PEERS = ("croniter", "cronsim", "cron_utils", "quartz")
REFUSED = "refused"
ACCEPTED = "accepted"
Outcome = tuple[str, ...] | bool | str
# How a vector is named, by kind: "<peer test>[<expression> @ <start>]" unless listed here.
NAMES = {
    "match": "{test}[{expression} matches {start}]",
    "nomatch": "{test}[{expression} does not match {start}]",
    "refused": "{test}[{expression}]",
    "accepted": "{test}[{expression}]",
}


@dataclass(frozen=True)
class Vector:
    """One peer case. `start` and `fires` are wall times in `tz` (ISO without an offset) or
    instants (with one); `shape` says how a fire time is written: "iso", "day" (the day of the
    month, croniter's range tests) or "year-month" (croniter's "24 2")."""

    test: str
    expression: str
    start: str = ""
    fires: tuple[str, ...] = ()
    tz: str = "UTC"
    kind: str = "next"  # next | match | nomatch | never | refused | accepted
    shape: str = "iso"

    @property
    def name(self) -> str:
        form = NAMES.get(self.kind, "{test}[{expression} @ {start}]")
        return form.format(test=self.test, expression=self.expression, start=self.start)


@dataclass(frozen=True)
class Difference:
    reason: str
    ours: Outcome


@dataclass(frozen=True)
class PeerTable:
    peer: str
    vectors: list[Vector]
    differences: dict[str, Difference]


def load(peer: str) -> PeerTable:
    data = json.loads((VECTORS_DIR / f"{peer}.json").read_text())
    vectors = [
        Vector(**{**fields, "fires": tuple(fields.get("fires", ()))})
        for group in data["groups"]
        for fields in group["vectors"]
    ]
    differences = {
        name: Difference(entry["reason"], _outcome(entry["ours"]))
        for name, entry in data["differences"].items()
    }
    return PeerTable(data["peer"], vectors, differences)


def _outcome(value: Any) -> Outcome:
    return tuple(value) if isinstance(value, list) else value


TABLES = {peer: load(peer) for peer in PEERS}


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


@pytest.mark.parametrize(
    ("vector", "differences"),
    [
        pytest.param(vector, table.differences, id=vector.name)
        for table in TABLES.values()
        for vector in table.vectors
    ],
)
def test_peer_vector(vector, differences):
    ours = our_outcome(vector)
    difference = differences.get(vector.name)
    if difference is None:
        assert ours == peer_outcome(vector)
    else:
        assert ours != peer_outcome(vector), "the difference is gone: drop it from differences"
        assert ours == difference.ours


@pytest.mark.parametrize("peer", PEERS)
def test_the_peer_table_is_consistent(peer):
    table = TABLES[peer]
    names = [vector.name for vector in table.vectors]
    assert len(names) == len(set(names)), "vector names are the differences' keys: keep unique"
    assert set(table.differences) <= set(names), "a differences entry names no vector"
    assert all(difference.reason for difference in table.differences.values())


# cronsim as an oracle: over the 5-field grammar both accept, in UTC (cronsim's DST handling
# differs from ours in the spring gap), the same next fire times. A fixed-seed sample of the
# product of these field forms keeps the run short and the cases the same every time.
ORACLE_FIELDS = (
    ("*", "*/7", "5", "0,30", "10-20/5", "59"),
    ("*", "3", "*/5", "22-23", "9-17", "0,12"),
    ("*", "1", "L", "*/10", "15", "LW", "13", "29", "31"),
    ("*", "2", "*/3", "JAN,JUL", "FEB-APR", "12"),
    ("*", "MON", "5L", "1#2", "0", "7", "SAT,SUN", "*/2", "1-5", "6#5"),
)


def _oracle_sample() -> list[str]:
    combinations = [" ".join(parts) for parts in product(*ORACLE_FIELDS)]
    return random.Random(16).sample(combinations, 300)


@pytest.mark.parametrize("expression", _oracle_sample())
def test_the_first_fire_times_agree_with_cronsim(expression):
    start = datetime(2024, 2, 20, 13, 37)
    try:
        expected = [time.isoformat() for time in islice(CronSim(expression, start), 5)]
    except CronSimError:
        with pytest.raises(CronError):
            list(islice(fire_times(expression, start.replace(tzinfo=UTC), "UTC"), 1))
        return
    ours = islice(fire_times(expression, start.replace(tzinfo=UTC), "UTC"), 5)
    assert [time.replace(tzinfo=None).isoformat() for time in ours] == expected
