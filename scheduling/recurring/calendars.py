"""A schedule's calendars (`scheduling.time.calendars`): a fire time inside a span they exclude is
skipped, or moved to the span's end (`calendar_policy`). Moved fires of one span become one
fire at its end, which also stands for a cron fire falling exactly there; the timeline then
goes on from that fire, like any other.

Pure but for loading the calendars: the cron's own fire times come in as a function."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

from django.db import models

from scheduling.recurring.policies import fires_left
from scheduling.recurring.shapes import Schedule
from scheduling.time.calendars.models import rules_for, unknown
from scheduling.time.calendars.rules import MICROSECOND, CalendarError, Excluding

CronFire = Callable[[datetime], "datetime | None"]
# Consecutive fire times a calendar may swallow before the schedule counts as ended (a
# schedule that only fires on 25 December, with 25 December excluded, never fires).
MAX_SKIPPED = 1000
CALENDARS_FORM = 'a list of calendar names, in order, e.g. ["public-holidays", "weekends"]'


class CalendarPolicy(models.TextChoices):
    SKIP = "skip", "Skip fire times in an excluded span"
    MOVE = "move", "Move them to the span's end"


@dataclass(frozen=True)
class PlannedFire:
    planned: datetime  # the cron's own fire time
    at: datetime | None  # when it fires: planned, the span's end (moved), None (skipped)
    span: tuple[datetime, datetime] | None = None  # the excluded span holding `planned`

    @property
    def status(self) -> str:
        if self.at is None:
            return "skipped"
        return "fires" if self.at == self.planned else "moved"


def planned_fires(
    cron_fire: CronFire, rules: Excluding | None, policy: str, after: datetime
) -> Iterator[PlannedFire]:
    """Every fire time after `after` as the calendars leave it; one skipped entry per span."""
    fire = cron_fire(after)
    while fire is not None:
        span = rules.excluded_span(fire) if rules is not None else None
        if span is None:
            yield PlannedFire(fire, fire)
            fire = cron_fire(fire)
        elif policy == CalendarPolicy.MOVE:
            yield PlannedFire(fire, span[1], span)
            fire = cron_fire(span[1])  # strictly after: a fire at the end is the moved one
        else:
            yield PlannedFire(fire, None, span)
            fire = cron_fire(span[1] - MICROSECOND)


def calendar_fire(cron_fire: CronFire, schedule: Schedule, after: datetime) -> datetime | None:
    """The schedule's first fire after `after` that its calendars let through (or move)."""
    try:
        rules = schedule_rules(schedule)
        for skipped, planned in enumerate(
            planned_fires(cron_fire, rules, schedule.calendar_policy, after)
        ):
            if planned.at is not None:
                return planned.at
            if skipped >= MAX_SKIPPED:
                break
    except CalendarError:
        pass  # calendars excluding all time (or gone): no fire; validation refuses it on save
    return None


def schedule_rules(schedule: Schedule) -> Excluding | None:
    """The union of the schedule's calendars, loaded once per schedule instance."""
    key = tuple(schedule.calendars)
    cached = schedule.__dict__.get("_calendar_rules")
    if cached is None or cached[0] != key:
        cached = (key, rules_for(key) if key else None)
        schedule.__dict__["_calendar_rules"] = cached
    return cached[1]


def schedule_plan(schedule: Schedule, *, count: int, after: datetime) -> list[PlannedFire]:
    """The next `count` fires with the skipped ones between them, for the previews; no more than
    max_fires leaves."""
    left = fires_left(schedule)
    count = count if left is None else min(count, left)
    entries: list[PlannedFire] = []
    if count <= 0:
        return entries
    rules = schedule_rules(schedule)
    for planned in planned_fires(schedule.cron_fire_after, rules, schedule.calendar_policy, after):
        entries.append(planned)
        fired = sum(entry.at is not None for entry in entries)
        if fired >= count or len(entries) - fired >= MAX_SKIPPED:
            break
    return entries


def calendar_errors(schedule: Schedule) -> dict[str, str]:
    """The schedule's calendar fields, by field, each message naming the accepted form."""
    names = schedule.calendars
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        return {"calendars": f"Enter {CALENDARS_FORM}."}
    missing = unknown(names)
    if missing:
        return {"calendars": f"No calendar is named {', '.join(missing)}; enter {CALENDARS_FORM}."}
    if schedule.calendar_policy not in CalendarPolicy.values:
        return {"calendar_policy": f"Enter one of {', '.join(CalendarPolicy.values)}."}
    return {}
