"""A recurring schedule's policies beyond its fire times: what happens when a fire comes while
the previous one is still being handled (overlap), what a DST change does to its wall times,
how many times it fires (max_fires), and what resuming it after a pause publishes. The
choices, and the checks that name the field and the accepted values; overlap.py applies the
overlap policy in the sweep, the DST policy lives in cron/dst.py."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import models
from django.utils import timezone as django_timezone

from scheduling.recurring.shapes import Schedule
from scheduling.rows.actors import current_actor


class MisfirePolicy(models.TextChoices):
    FIRE_ALL = "fire_all", "Fire every missed time"
    FIRE_ONCE = "fire_once", "Fire once, then move on"
    SKIP = "skip", "Skip missed times"


class OverlapPolicy(models.TextChoices):
    ALLOW = "allow", "Publish every fire"
    SKIP = "skip", "Skip a fire while the previous one is not handled"
    BUFFER_ONE = "buffer_one", "Hold one fire until the previous one is handled"


class DstGapPolicy(models.TextChoices):
    SHIFT = "shift", "Fire at the jump"
    SKIP = "skip", "Do not fire"


class DstRepeatPolicy(models.TextChoices):
    AUTO = "auto", "Twice for interval-style expressions, else once"
    ONCE = "once", "Once, on the first pass"
    TWICE = "twice", "Twice, by elapsed time"


class ResumePolicy(models.TextChoices):
    SKIP = "skip", "Skip the paused fires"
    CATCH_UP = "catch_up", "Catch up the paused fires within the catch-up window"


CHOICES: dict[str, type[models.TextChoices]] = {
    "overlap_policy": OverlapPolicy,
    "dst_gap_policy": DstGapPolicy,
    "dst_repeat_policy": DstRepeatPolicy,
    "resume_policy": ResumePolicy,
}
MAX_FIRES_MOST = 2**31 - 1  # its column: a PositiveIntegerField
MAX_FIRES_FORM = f"a whole number from 1 to {MAX_FIRES_MOST:,}, or null (empty) for no limit"
PAUSED_NOTE_MAX = 500


def accepted(field: str) -> str:
    return ", ".join(CHOICES[field].values)


def choice_message(field: str, value: Any) -> str:
    return f"{field} {value!r} is not valid; expected one of {accepted(field)}."


def policy_errors(schedule: Schedule) -> dict[str, str]:
    """Every problem with the schedule's policies, by field; empty when they can be saved."""
    errors = {
        field: choice_message(field, getattr(schedule, field))
        for field, choices in CHOICES.items()
        if getattr(schedule, field) not in choices.values
    }
    max_fires = schedule.max_fires
    if max_fires is not None and (
        isinstance(max_fires, bool)
        or not isinstance(max_fires, int)
        or not 1 <= max_fires <= MAX_FIRES_MOST
    ):
        errors["max_fires"] = f"max_fires must be {MAX_FIRES_FORM}; got {max_fires!r}."
    overlapping = schedule.overlap_policy != OverlapPolicy.ALLOW
    if "overlap_policy" not in errors and overlapping and schedule.queue:
        errors["overlap_policy"] = (
            f"overlap_policy {schedule.overlap_policy!r} needs a task target whose handler "
            "runs handle_once (a queue's plain JSON is never reported handled); "
            "use allow with a queue."
        )
    if len(schedule.paused_note or "") > PAUSED_NOTE_MAX:
        errors["paused_note"] = f"paused_note is at most {PAUSED_NOTE_MAX} characters."
    return errors


def finished(schedule: Schedule) -> bool:
    """It fired max_fires times: no fire is left."""
    return schedule.max_fires is not None and schedule.fire_count >= schedule.max_fires


def fires_left(schedule: Schedule) -> int | None:
    """How many more times it may fire; None: no limit."""
    if schedule.max_fires is None:
        return None
    return max(schedule.max_fires - schedule.fire_count, 0)


def track_pause(schedule: Schedule) -> datetime | None:
    """Before a save: a paused (disabled) schedule gets when and by whom, once; a running one
    loses its pause and note. Returns where a resume with resume_policy catch_up catches up
    from (the pause's start), else None."""
    if not schedule.enabled:
        if schedule.paused_at is None:
            schedule.paused_at = django_timezone.now()
            schedule.paused_by = current_actor()
        return None
    resume_from = schedule.paused_at if schedule.resume_policy == ResumePolicy.CATCH_UP else None
    schedule.paused_at, schedule.paused_by, schedule.paused_note = None, "", ""
    return resume_from
