"""Jitter: each fire of a schedule with `jitter` seconds is due at a stable offset in
[t, t + jitter) from its planned fire time t, so schedules sharing a cron do not all fire in
the same second. Pure: the offset is a keyed hash of the schedule's name and t, the same on
every host, in every process and on every replan (Python's hash() is salted per process)."""

from __future__ import annotations

import hashlib
import itertools
from datetime import UTC, datetime, timedelta

from scheduling.recurring.shapes import Occurrence, Schedule

MAX_JITTER = 86_400  # seconds: one day
JITTER_FORM = f"a whole number of seconds from 0 (no jitter) to {MAX_JITTER:,} (one day)"
# The API's and the admin form's field: every refusal says the accepted form.
JITTER_ERRORS = {
    key: f"Enter {JITTER_FORM}."
    for key in ("invalid", "min_value", "max_value", "max_string_length")
}
# The fire times a jitter is checked against: enough to meet every gap of a daily or hourly
# pattern (a "0,1 * * * *" or a "0 9,17 * * *"), few enough for a form's save.
GAP_SAMPLE = 100
_MICROSECONDS = 1_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def jitter_offset(name: str, planned: datetime, jitter: int) -> timedelta:
    """The offset of the fire planned at `planned`: in [0, jitter) seconds, to the microsecond."""
    if jitter <= 0:
        return timedelta(0)
    # Whole microseconds since the epoch: the same instant keys the same in any zone.
    key = f"{name}:{(planned - _EPOCH) // timedelta(microseconds=1)}".encode()
    digest = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")
    return timedelta(microseconds=digest % (jitter * _MICROSECONDS))


def jittered(name: str, planned: datetime, jitter: int) -> datetime:
    """When the fire planned at `planned` is due: never before it, always before planned + jitter."""
    return planned + jitter_offset(name, planned, jitter)


def planned_fire(occurrence: Occurrence) -> datetime:
    """The fire time the timeline goes on from: the planned time of a row due at its jittered
    time; the due time of a row the sweep moved (held by buffer_one, a retry's backoff), as
    for a row without jitter, so the fire times that passed meanwhile are not sent."""
    schedule = occurrence.schedule
    if not schedule.jitter:  # and business_due_at, deferred in the sweep's claim, is not read
        return occurrence.due_at
    planned = occurrence.business_due_at or occurrence.due_at
    if occurrence.due_at == jittered(schedule.name, planned, schedule.jitter):
        return planned
    return occurrence.due_at


def shortest_gap(schedule: Schedule, after: datetime) -> timedelta | None:
    """The shortest time between two of the schedule's next GAP_SAMPLE fire times after
    `after`; None when it has fewer than two."""
    times: list[datetime] = []
    fire = schedule.next_fire_after(after)
    while fire is not None and len(times) < GAP_SAMPLE:
        times.append(fire)
        fire = schedule.next_fire_after(fire)
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    return min(gaps, default=None)
