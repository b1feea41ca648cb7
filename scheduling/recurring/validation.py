"""What makes a schedule savable: every problem by field, each message naming the field and
the accepted form. Reads the schedule's attributes only, so forms and the API check a
candidate before anything is written."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.utils import timezone as django_timezone

from scheduling.models import iso_utc, storable_utc
from scheduling.recurring import cron
from scheduling.recurring.calendars import calendar_errors
from scheduling.recurring.conf import CATCHUP_WINDOW_FORM, MAX_CATCHUP_WINDOW
from scheduling.recurring.policies import policy_errors
from scheduling.recurring.templates import TemplateError, validate_template
from scheduling.targets import TargetError, check_callback

if TYPE_CHECKING:
    from scheduling.recurring.models import RecurringSchedule


def schedule_errors(
    schedule: RecurringSchedule, *, check_fires: bool = True, check_target: bool = True
) -> dict[str, str]:
    """Every problem with a schedule, by field; empty when it can be saved. A stored target
    that later rules refuse does not keep the schedule from being edited or disabled."""
    errors: dict[str, str] = {}
    for field, check in (
        ("name", lambda: validate_slug(schedule.name)),
        ("timezone", lambda: cron.time_zone(schedule.timezone)),
        ("template_timezone", lambda: _check_template_timezone(schedule.template_timezone)),
        ("cron", lambda: cron.parse(schedule.cron)),
        ("payload_template", lambda: validate_template(schedule.payload_template)),
    ):
        try:
            check()
        except (ValidationError, cron.CronError, TemplateError) as exc:
            errors[field] = (
                "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
            )
    errors.update(_target_errors(schedule, check_rules=check_target))
    errors.update(_time_errors(schedule))
    errors.update(policy_errors(schedule))  # overlap, DST, max_fires, pause: policies.py
    errors.update(calendar_errors(schedule))
    if check_fires and schedule.enabled and not errors and not _fires_at_all(schedule):
        errors["cron"] = (
            f"{schedule.cron!r} never fires after {iso_utc(max(schedule.starts_at, django_timezone.now()))}"
            + (f" and before ends_at {iso_utc(schedule.ends_at)}" if schedule.ends_at else "")
        )
    return errors


def _check_template_timezone(name: str) -> None:
    if name:
        cron.time_zone(name)


def _target_errors(schedule: RecurringSchedule, *, check_rules: bool) -> dict[str, str]:
    if bool(schedule.task) == bool(schedule.queue):
        message = "Set exactly one target: task (a Celery task name) or queue (a queue name)."
        return {"task": message, "queue": message}
    if not check_rules:
        return {}
    # The same rules as a keyed job's callback: no internal task, no queue Celery or the
    # broker reads, no odd characters.
    field = "task" if schedule.task else "queue"
    try:
        check_callback({"type": field, field: getattr(schedule, field)})
    except TargetError as error:
        message = error.message.removeprefix(f"{field}: ")
        return {field: message[0].upper() + message[1:]}
    return {}


def _time_errors(schedule: RecurringSchedule) -> dict[str, str]:
    errors: dict[str, str] = {}
    for name in ("starts_at", "ends_at"):
        value = getattr(schedule, name)
        if value is None:
            continue
        if not isinstance(value, datetime) or value.utcoffset() is None:
            errors[name] = f"{name} must be an aware datetime, e.g. 2026-12-24T14:00:00Z."
            continue
        try:
            storable_utc(value)
        except ValueError as exc:
            errors[name] = f"{name}: {exc}"
    if not errors and schedule.ends_at is not None and schedule.ends_at <= schedule.starts_at:
        errors["ends_at"] = "ends_at must be after starts_at."
    lateness = schedule.max_lateness
    if lateness is not None and lateness <= timedelta(0):
        errors["max_lateness"] = "max_lateness must be a positive duration, e.g. PT15M."
    window = schedule.catchup_window
    if not isinstance(window, timedelta) or not timedelta(0) < window <= MAX_CATCHUP_WINDOW:
        errors["catchup_window"] = f"catchup_window must be {CATCHUP_WINDOW_FORM}."
    return errors


def _fires_at_all(schedule: RecurringSchedule) -> bool:
    return schedule.next_fire_after(django_timezone.now()) is not None
