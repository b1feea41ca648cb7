"""What a schedule will do at its zone's next DST changes: each change, the policy that applies,
and the fire times around it, in the zone's wall time. The admin and the API's preview show it,
so a schedule's DST behaviour is read, not guessed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduling.recurring import cron
from scheduling.recurring.models import MICROSECOND, RecurringSchedule

OUTLOOK_COUNT = 2  # transitions shown: the next spring and autumn change
MAX_FIRES_SHOWN = 12


@dataclass(frozen=True)
class DstOutlook:
    at: datetime  # the first instant of the new offset, UTC
    change: str  # e.g. "clocks go forward 1:00:00 at 02:00 EST, to 03:00 EDT"
    policy: str  # the policy that applies, e.g. "dst_gap_policy shift: fire at the jump"
    window: str  # the local span the fire times are listed for
    fire_times: list[datetime]  # the schedule's fire times in that span, UTC


def dst_outlook(schedule: RecurringSchedule, *, now: datetime) -> list[DstOutlook]:
    """The next DST changes of the schedule's zone and its fire times around each; empty for a
    zone without DST and for @every and @at, which count elapsed time."""
    plan = cron.parse(schedule.cron)
    if plan.every is not None or plan.at is not None:
        return []
    zone = cron.time_zone(schedule.timezone)
    return [
        _outlook(schedule, transition)
        # From a whole second: the search steps by seconds, so each change is found exactly.
        for transition in cron.next_transitions(zone, now.replace(microsecond=0), OUTLOOK_COUNT)
    ]


def _outlook(schedule: RecurringSchedule, transition: cron.Transition) -> DstOutlook:
    zone = cron.time_zone(schedule.timezone)
    shift = abs(transition.offset_after - transition.offset_before)
    span = shift + timedelta(hours=1)
    start, end = transition.at - span, transition.at + span
    before = (transition.at - MICROSECOND).astimezone(zone)
    after = transition.at.astimezone(zone)
    direction = "forward" if transition.forward else "back"
    change = (
        f"{after:%Y-%m-%d}: clocks go {direction} {shift} at "
        f"{(transition.at + transition.offset_before).replace(tzinfo=None):%H:%M} "
        f"{before.tzname()}, to {after:%H:%M %Z} ({in_words(shift)})"
    )
    window = f"{start.astimezone(zone):%H:%M %Z} to {end.astimezone(zone):%H:%M %Z}"
    return DstOutlook(
        transition.at, change, _policy(schedule, transition), window, _fires(schedule, start, end)
    )


def in_words(shift: timedelta) -> str:
    """1:00:00 -> "one hour"; 0:30:00 -> "30 minutes" (Lord Howe's change)."""
    hours, minutes = divmod(int(shift.total_seconds()) // 60, 60)
    words = ["one hour" if hours == 1 else f"{hours} hours"] if hours else []
    return " ".join([*words, f"{minutes} minutes"] if minutes else words)


def _policy(schedule: RecurringSchedule, transition: cron.Transition) -> str:
    if transition.forward:
        what = "fire at the jump" if schedule.dst_gap_policy == "shift" else "do not fire"
        return f"dst_gap_policy {schedule.dst_gap_policy}: a skipped wall time: {what}"
    repeat = schedule.dst_repeat_policy
    if repeat == "auto":
        twice = cron.parse(schedule.cron).interval
        repeat = f"auto ({'twice, interval-style' if twice else 'once, fixed-time'})"
    return f"dst_repeat_policy {repeat}: a repeated wall time fires {_times(repeat)}"


def _times(repeat: str) -> str:
    return "on both passes" if "twice" in repeat else "on the first pass only"


def _fires(schedule: RecurringSchedule, start: datetime, end: datetime) -> list[datetime]:
    fires: list[datetime] = []
    current = start - MICROSECOND
    while len(fires) < MAX_FIRES_SHOWN:
        fire = schedule.next_fire_after(current)
        if fire is None or fire > end:
            break
        fires.append(fire)
        current = fire
    return fires


def local(fire: datetime, schedule: RecurringSchedule) -> str:
    """A fire time as the outlook shows it: wall time and zone abbreviation."""
    return f"{fire.astimezone(cron.time_zone(schedule.timezone)):%H:%M:%S %Z}"
