"""The fields of a recurring schedule's policies (policies.py): calendars, overlap, DST,
max_fires and the pause. An abstract base of RecurringSchedule, so models.py keeps to the
timeline."""

from __future__ import annotations

from django.db import models
from django.db.models import Value

from scheduling.recurring.calendars import CALENDARS_FORM, CalendarPolicy
from scheduling.recurring.policies import (
    PAUSED_NOTE_MAX,
    DstGapPolicy,
    DstRepeatPolicy,
    OverlapPolicy,
    ResumePolicy,
)


class SchedulePolicies(models.Model):
    # Calendars (scheduling.time.calendars) whose excluded spans hold back fire times.
    calendars = models.JSONField(
        default=list,
        blank=True,
        db_default=Value([], models.JSONField()),
        help_text=f"Fire times these calendars exclude are skipped or moved: {CALENDARS_FORM}.",
    )
    calendar_policy = models.CharField(
        max_length=8,
        choices=CalendarPolicy.choices,
        default=CalendarPolicy.SKIP,
        db_default=CalendarPolicy.SKIP,
        help_text="skip: a fire time in an excluded span does not fire; move: it fires at the "
        "span's end (one fire for all those in the span).",
    )
    overlap_policy = models.CharField(
        max_length=16,
        choices=OverlapPolicy.choices,
        default=OverlapPolicy.ALLOW,
        db_default=OverlapPolicy.ALLOW,
        help_text="allow: publish every fire; skip: a fire due while the previous one is not "
        "handled is skipped; buffer_one: it waits (one at most) until the previous one is "
        "handled or its handling timeout passes.",
    )
    dst_gap_policy = models.CharField(
        max_length=8,
        choices=DstGapPolicy.choices,
        default=DstGapPolicy.SHIFT,
        db_default=DstGapPolicy.SHIFT,
        help_text="A wall time the clocks skip in spring: shift (fire at the jump) or skip.",
    )
    dst_repeat_policy = models.CharField(
        max_length=8,
        choices=DstRepeatPolicy.choices,
        default=DstRepeatPolicy.AUTO,
        db_default=DstRepeatPolicy.AUTO,
        help_text="A wall time repeated in autumn: once (first pass), twice (both, by elapsed "
        "time) or auto (twice when the minute or hour field starts with *, else once).",
    )
    max_fires = models.PositiveIntegerField(
        null=True, blank=True, help_text="Stop after this many fires; empty: no limit."
    )
    fire_count = models.PositiveIntegerField(
        default=0, db_default=0, editable=False, help_text="Timeline fires published so far."
    )
    paused_note = models.CharField(
        max_length=PAUSED_NOTE_MAX,
        blank=True,
        default="",
        db_default="",
        help_text="Why the schedule is paused (enabled off); cleared when it resumes.",
    )
    paused_at = models.DateTimeField(null=True, blank=True, editable=False)
    paused_by = models.CharField(max_length=200, blank=True, default="", editable=False)
    resume_policy = models.CharField(
        max_length=16,
        choices=ResumePolicy.choices,
        default=ResumePolicy.SKIP,
        db_default=ResumePolicy.SKIP,
        help_text="On resuming: skip the fires the pause left out, or catch_up those within "
        "the catch-up window.",
    )

    class Meta:
        abstract = True
