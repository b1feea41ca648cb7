"""A schedule's timeline: which fire times follow one, by its misfire policy. Pure: the
schedule and `now` come in, the successors to insert go out; services.py writes them."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import NamedTuple

from scheduling.recurring import cron
from scheduling.recurring.conf import RecurringSettings
from scheduling.recurring.jitter import jittered, planned_fire
from scheduling.recurring.policies import MisfirePolicy, fires_left
from scheduling.recurring.shapes import Occurrence, Schedule
from scheduling.time.times import iso_utc

logger = logging.getLogger(__name__)

MICROSECOND = timedelta(microseconds=1)


class Successor(NamedTuple):
    schedule_id: int
    version: int
    due_at: datetime
    missed_run: int
    catch_up: bool = False
    business_due_at: datetime | None = None  # the planned fire time, when jitter moved due_at


def successor(
    schedule: Schedule, fire: datetime, missed_run: int, *, catch_up: bool = False
) -> Successor:
    """The occurrence of the fire planned at `fire`: due at its jittered time (jitter.py),
    the planned time kept in business_due_at."""
    due_at = jittered(schedule.name, fire, schedule.jitter)
    planned = fire if due_at != fire else None
    return Successor(schedule.pk, schedule.version, due_at, missed_run, catch_up, planned)


def occurrence_successors(
    occurrence: Occurrence, *, now: datetime, conf: RecurringSettings
) -> list[Successor]:
    """What follows this occurrence, by the schedule's misfire policy: its next fire time,
    or in a fire_all catch-up every fire time missed since, the last of them the head."""
    return timeline_successors(
        occurrence.schedule,
        after=planned_fire(occurrence),
        missed_run=occurrence.missed_run,
        now=now,
        conf=conf,
    )


def timeline_successors(
    schedule: Schedule,
    *,
    after: datetime,
    missed_run: int,
    now: datetime,
    conf: RecurringSettings,
    catch_up: bool = False,
) -> list[Successor]:
    """The schedule's fire times after `after` due by the misfire policy, then its next one (the
    head); none once it ended. `catch_up`: every missed fire time in the catch-up window,
    whatever the policy (resume_policy catch_up). Never more than max_fires leaves."""
    catch_up = catch_up or schedule.misfire_policy == MisfirePolicy.FIRE_ALL
    left = fires_left(schedule)
    missed_before = now - timedelta(seconds=conf.misfire_grace)
    floor = _floor(schedule, now, missed_before, catch_up, conf)
    room = conf.max_catchup_fires - missed_run  # what this catch-up may still publish
    if catch_up:
        floor = _skip_past_the_cap(schedule, after, floor, room, now, conf)
    fire = schedule.next_fire_after(max(after, floor - MICROSECOND))
    if fire is None or left == 0:
        return []
    if fire >= missed_before or not catch_up:
        run = missed_run + 1 if fire < missed_before else 0
        return [successor(schedule, fire, run)]
    # A catch-up: every missed fire time up to now, and the next one. A long one goes in
    # chunks: the chunk's last row is the head, and delivering it inserts the next chunk.
    chunk = min(conf.catch_up_chunk, room, conf.catch_up_chunk if left is None else left)
    times = _catch_up_times(schedule, fire, now=now, chunk=chunk)
    last = len(times) - 1
    return [
        successor(
            schedule,
            time,
            missed_run + 1 + index if time < missed_before else 0,
            catch_up=index < last,
        )
        for index, time in enumerate(times)
    ]


def _catch_up_times(
    schedule: Schedule, fire: datetime, *, now: datetime, chunk: int
) -> list[datetime]:
    """From a missed fire time, those after it up to now and the next one, `chunk` at most."""
    times = [fire]
    while times[-1] <= now and len(times) < chunk:
        following = schedule.next_fire_after(times[-1])
        if following is None:
            break
        times.append(following)
    return times


def _floor(
    schedule: Schedule,
    now: datetime,
    missed_before: datetime,
    catch_up: bool,
    conf: RecurringSettings,
) -> datetime:
    """The earliest fire time still worth publishing now."""
    floors = [now - schedule.max_lateness] if schedule.max_lateness is not None else []
    if catch_up:
        floors.append(now - _capped_window(schedule, conf))
    else:
        floors.append(missed_before)
    return max(floors)


def _capped_window(schedule: Schedule, conf: RecurringSettings) -> timedelta:
    """The catch-up window, shortened where its fire times could outnumber the cap (a schedule
    saved before the cap, or under a higher one): the most recent fire times are kept."""
    plan = cron.parse(schedule.cron)
    return cron.longest_span_within(plan, conf.max_catchup_fires, schedule.catchup_window)


def _skip_past_the_cap(
    schedule: Schedule,
    after: datetime,
    floor: datetime,
    room: int,
    now: datetime,
    conf: RecurringSettings,
) -> datetime:
    """The floor, moved to now once the catch-up has published its most; the fire times the
    cap skips (not those the window leaves out) are logged."""
    if room <= 0:
        floor = max(floor, now)
    if floor <= after:
        return floor
    first = schedule.next_fire_after(max(after, now - schedule.catchup_window) - MICROSECOND)
    if first is None or first >= floor:
        return floor
    logger.warning(
        "recurring schedule %s: a catch-up publishes at most %d occurrences "
        "(SCHEDULING_MAX_CATCHUP_FIRES); its fire times from %s to before %s are skipped",
        schedule.name,
        conf.max_catchup_fires,
        iso_utc(first),
        iso_utc(floor),
    )
    return floor
