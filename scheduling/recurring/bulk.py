"""The chain step's fire times for a whole claimed batch: the cron arithmetic done once for the
schedules that share it.

A sweep's batch is a thousand heads, and at a busy second most of them share a cron expression
and a time zone (every daily schedule due at midnight). Row by row, each head's next fire time
is computed from its own schedule: models.py's cache keys on the schedule's starts_at too, which
differs for every schedule, so the search ran once a row. Here the cron's own answer is kept per
(expression, zone, DST policy, the instant it is asked after, and for `@every` the anchor), and
each schedule's bounds (starts_at, ends_at) are applied to it after; a schedule with calendars
keeps its own arithmetic (a calendar moves its fires one by one). Everything else, the misfire,
catch-up, max_fires and jitter policies, is timeline.py's, unchanged: the test of this module
compares its successors with the row-by-row chain's on a corpus of every policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from scheduling.recurring import cron
from scheduling.recurring.conf import RecurringSettings
from scheduling.recurring.jitter import planned_fire
from scheduling.recurring.shapes import Occurrence, Schedule
from scheduling.recurring.timeline import MICROSECOND, Successor, timeline_successors

CronKey = tuple[str, str, str, str, datetime, datetime | None]


class SharedFires:
    """Next fire times, the cron's search done once per CronKey for a batch's schedules."""

    def __init__(self) -> None:
        self.known: dict[CronKey, datetime | None] = {}

    def next_fire_after(self, schedule: Schedule, after: datetime) -> datetime | None:
        if schedule.calendars:
            return schedule.next_fire_after(after)
        start = max(after, schedule.starts_at - MICROSECOND)
        anchor = schedule.starts_at if cron.parse(schedule.cron).every is not None else None
        policy = (schedule.dst_gap_policy, schedule.dst_repeat_policy)
        key = (schedule.cron, schedule.timezone, *policy, start, anchor)
        if key not in self.known:
            self.known[key] = cron.next_fire(
                schedule.cron,
                start,
                schedule.timezone,
                anchor=anchor,
                dst_gap=policy[0],
                dst_repeat=policy[1],
            )
        fire = self.known[key]
        if fire is None or (schedule.ends_at is not None and fire > schedule.ends_at):
            return None
        return fire


class SharingSchedule:
    """A schedule whose next_fire_after() asks the batch's SharedFires; every other attribute
    is the schedule's own."""

    def __init__(self, schedule: Schedule, fires: SharedFires) -> None:
        # The schedule's loaded fields read as this object's own: one copy of its __dict__
        # instead of a __getattr__ call for each of the seven the timeline reads. (Read only:
        # nothing on the timeline's path sets an attribute of the schedule.)
        self.__dict__.update(vars(schedule))
        self._schedule = schedule
        self._fires = fires

    def next_fire_after(self, after: datetime) -> datetime | None:
        return self._fires.next_fire_after(self._schedule, after)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._schedule, name)


def batch_successors(
    heads: Sequence[Occurrence], *, now: datetime, conf: RecurringSettings
) -> list[Successor]:
    """What follows each head (timeline.occurrence_successors for every one), in order."""
    fires = SharedFires()
    successors: list[Successor] = []
    for head in heads:
        schedule: Any = SharingSchedule(head.schedule, fires)
        successors.extend(
            timeline_successors(
                schedule, after=planned_fire(head), missed_run=head.missed_run, now=now, conf=conf
            )
        )
    return successors
