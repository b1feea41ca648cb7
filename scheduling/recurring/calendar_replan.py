"""The schedules a calendar reaches (`scheduling.time.calendars`): who uses a calendar, for its
editor, and a new plan for each when it changes (a post_save of Calendar). The fire times a
calendar leaves are calendars.py's."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from scheduling.recurring.models import RecurringSchedule
from scheduling.rows.databases import database_of
from scheduling.time.calendars.models import dependents


def schedules_using(name: str) -> list[str]:
    """The schedules whose calendars include `name` (calendar_users' finder)."""
    return [f"schedule {schedule}" for _, schedule in _naming({name})]


def _naming(names: set[str]) -> list[tuple[int, str]]:
    """(pk, name) of the schedules naming any of `names`; few schedules have calendars."""
    schedules = RecurringSchedule.objects.exclude(calendars=[])
    rows = schedules.values_list("pk", "name", "calendars")
    return [(pk, name) for pk, name, used in rows if names & set(used)]


def schedules_replan(*, calendar: str) -> int:
    """A calendar changed: every schedule it reaches (directly or composed) takes a new version,
    so that its pending occurrences are computed again. Returns how many did."""
    ids = [pk for pk, _ in _naming(dependents(calendar))]
    with transaction.atomic(using=database_of(RecurringSchedule)):
        for schedule in RecurringSchedule.objects.select_for_update().filter(pk__in=ids):
            # Loaded state unknown counts as changed: save() bumps the version, cancels the
            # pending occurrences and materialises the next ones under the new calendars.
            del schedule._loaded
            _replan(schedule, calendar)
    return len(ids)


def _replan(schedule: RecurringSchedule, calendar: str) -> None:
    """Saves the schedule again; a refusal is the calendar change's, worded without the
    schedule's own values (its cron), which the calendar's editor may not be allowed to read."""
    try:
        schedule.save()
    except ValidationError:
        raise ValidationError(
            {
                "calendar": f"This change to {calendar} leaves a schedule that uses it with no "
                "fire time; change the calendar, or the schedule first."
            }
        ) from None


def replan_on_save(sender: Any, instance: Any, **kwargs: Any) -> None:
    """post_save of a Calendar."""
    schedules_replan(calendar=instance.name)
