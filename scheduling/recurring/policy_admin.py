"""The schedule admin's policy sections (policies.py): overlap, DST, max_fires and its count,
the pause and its note; and what the schedule will do at its zone's next DST changes, which the
fire preview shows below the fire times (it follows the form's values)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils import timezone as django_timezone
from django.utils.html import format_html, format_html_join

from scheduling.recurring.cron import CronError
from scheduling.recurring.dst_outlook import dst_outlook, local
from scheduling.recurring.models import RecurringSchedule
from scheduling.recurring.policies import finished
from scheduling.time.calendars.rules import CalendarError

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldsetSpec

POLICY_READ_ONLY = ("fire_count", "paused_at", "paused_by", "state")
POLICY_FIELDSETS: _FieldsetSpec = (
    (
        "Policies",
        {
            "fields": (
                "overlap_policy",
                "dst_gap_policy",
                "dst_repeat_policy",
                "max_fires",
                "fire_count",
            )
        },
    ),
    ("Pause", {"fields": ("state", "paused_note", "paused_at", "paused_by", "resume_policy")}),
)


def schedule_state(schedule: RecurringSchedule) -> str:
    """running, paused (with its note), or finished (its max_fires spent)."""
    if finished(schedule):
        return f"finished: fired {schedule.fire_count} of {schedule.max_fires} times"
    if not schedule.enabled:
        note = f": {schedule.paused_note}" if schedule.paused_note else ""
        return f"paused{note}"
    if schedule.max_fires is not None:
        return f"running: fired {schedule.fire_count} of {schedule.max_fires} times"
    return "running"


def dst_outlook_html(schedule: RecurringSchedule) -> str:
    """Each of the zone's next DST changes: the policy that applies and the fire times near it
    (no paragraph: in the preview box a paragraph is a refusal)."""
    try:
        outlooks = dst_outlook(schedule, now=django_timezone.now())
    except (CronError, CalendarError) as exc:
        return format_html('<div class="dst-outlook">At the next DST changes: {}</div>', exc)
    if not outlooks:
        return format_html(
            '<div class="dst-outlook">{}</div>',
            "No DST change ahead in this zone, or the expression counts elapsed time.",
        )
    items = (
        (
            outlook.change,
            outlook.policy,
            outlook.window,
            ", ".join(local(fire, schedule) for fire in outlook.fire_times) or "none",
        )
        for outlook in outlooks
    )
    return format_html(
        '<figure class="dst-outlook"><figcaption>At the next DST changes:</figcaption>'
        "<ul>{}</ul></figure>",
        format_html_join("", "<li>{}; {}. Fire times from {}: {}</li>", items),
    )
