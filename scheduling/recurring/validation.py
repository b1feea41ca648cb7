"""What makes a schedule savable: every problem by field, each message naming the field and
the accepted form. Reads the schedule's attributes only, so forms and the API check a
candidate before anything is written."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.utils import timezone as django_timezone

from scheduling.delivery.publishing.targets import TargetError, check_callback
from scheduling.recurring import cron
from scheduling.recurring.calendars import calendar_errors
from scheduling.recurring.conf import (
    CATCHUP_WINDOW_FORM,
    MAX_CATCHUP_WINDOW,
    RecurringSettings,
    recurring_settings,
)
from scheduling.recurring.jitter import JITTER_FORM, MAX_JITTER, shortest_gap
from scheduling.recurring.policies import policy_errors
from scheduling.recurring.shapes import Schedule
from scheduling.recurring.templates import TemplateError, validate_template
from scheduling.time.parsing import iso_duration
from scheduling.time.times import iso_utc, storable_utc


def schedule_errors(
    schedule: Schedule,
    *,
    check_fires: bool = True,
    check_target: bool = True,
    known_task: bool = False,
) -> dict[str, str]:
    """Every problem with a schedule, by field; empty when it can be saved. A stored target
    that later rules refuse does not keep the schedule from being edited or disabled.
    `known_task` (the API's rule, as for keyed jobs): a task must be registered or external."""
    errors: dict[str, str] = {}
    for field, check in (
        ("name", lambda: validate_slug(schedule.name)),
        ("timezone", lambda: cron.time_zone(schedule.timezone)),
        ("template_timezone", lambda: _check_template_timezone(schedule.template_timezone)),
        ("cron", lambda: cron.parse(schedule.cron)),
        ("payload_template", lambda: _check_template(schedule)),
    ):
        try:
            check()
        except (ValidationError, cron.CronError, TemplateError) as exc:
            errors[field] = (
                "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
            )
    errors.update(_target_errors(schedule, check_rules=check_target, known_task=known_task))
    errors.update(_time_errors(schedule))
    errors.update(policy_errors(schedule))  # overlap, DST, max_fires, pause: policies.py
    errors.update(calendar_errors(schedule))
    if schedule.enabled and not errors:
        errors.update(volume_errors(schedule, recurring_settings()))
    if schedule.jitter and not errors:
        errors.update(_jitter_gap_errors(schedule))
    if check_fires and schedule.enabled and not errors and not _fires_at_all(schedule):
        errors["cron"] = (
            f"{schedule.cron!r} never fires after {iso_utc(max(schedule.starts_at, django_timezone.now()))}"
            + (f" and before ends_at {iso_utc(schedule.ends_at)}" if schedule.ends_at else "")
        )
    return errors


def _check_template_timezone(name: str) -> None:
    if name:
        cron.time_zone(name)


def _check_template(schedule: Schedule) -> None:
    name = schedule.name if isinstance(schedule.name, str) else ""
    validate_template(schedule.payload_template, schedule_name=name)


def _target_errors(schedule: Schedule, *, check_rules: bool, known_task: bool) -> dict[str, str]:
    if bool(schedule.task) == bool(schedule.queue):
        message = "Set exactly one target: task (a Celery task name) or queue (a queue name)."
        return {"task": message, "queue": message}
    if not check_rules:
        return {}
    # The same rules as a keyed job's callback: no internal task, no queue Celery or the
    # broker reads, no odd characters.
    field = "task" if schedule.task else "queue"
    try:
        check_callback({"type": field, field: getattr(schedule, field)}, known_task=known_task)
    except TargetError as error:
        message = error.message.removeprefix(f"{field}: ")
        return {field: message[0].upper() + message[1:]}
    return {}


def _time_errors(schedule: Schedule) -> dict[str, str]:
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
    jitter = schedule.jitter
    if isinstance(jitter, bool) or not isinstance(jitter, int) or not 0 <= jitter <= MAX_JITTER:
        errors["jitter"] = f"jitter must be {JITTER_FORM}; got {jitter!r}."
    return errors


def volume_errors(schedule: Schedule, conf: RecurringSettings) -> dict[str, str]:
    """The work one schedule may set off: fire times per hour, and occurrences per catch-up."""
    plan = cron.parse(schedule.cron)
    per_hour = cron.fires_per_hour(plan)
    if per_hour > conf.max_fires_per_hour:
        return {
            "cron": f"{schedule.cron!r} fires up to {per_hour} times an hour; at most "
            f"{conf.max_fires_per_hour} (SCHEDULING_MAX_FIRES_PER_HOUR): fire less often."
        }
    if schedule.misfire_policy != "fire_all":
        return {}
    window = catch_up_span(schedule)
    fires = cron.most_fires_within(plan, window)
    if fires <= conf.max_catchup_fires:
        return {}
    fitting = cron.longest_span_within(plan, conf.max_catchup_fires, window)
    return {
        "catchup_window": f"With cron {schedule.cron!r}, catchup_window {iso_duration(window)} "
        f"would publish up to {fires} occurrences in one fire_all catch-up; at most "
        f"{conf.max_catchup_fires} (SCHEDULING_MAX_CATCHUP_FIRES): shorten catchup_window "
        f"to at most {iso_duration(fitting)}, or choose misfire_policy fire_once or skip."
    }


def _jitter_gap_errors(schedule: Schedule) -> dict[str, str]:
    """A jitter longer than the gap between two fire times would let a fire go after the next
    planned one, which the misfire policy would then count as missed. As long as it is fine:
    the offset stays below the jitter."""
    after = max(schedule.starts_at, django_timezone.now())
    gap = shortest_gap(schedule, after)
    if gap is None or schedule.jitter <= gap.total_seconds():
        return {}
    return {
        "jitter": f"jitter must be at most the shortest gap between two fire times "
        f"({gap.total_seconds():,.0f} s with cron {schedule.cron!r}) and {JITTER_FORM}; "
        f"got {schedule.jitter}."
    }


def catch_up_span(schedule: Schedule) -> timedelta:
    """The longest run of fire times one catch-up may cover: the window, or the whole
    schedule where it ends sooner."""
    if schedule.ends_at is None:
        return schedule.catchup_window
    return min(schedule.catchup_window, schedule.ends_at - schedule.starts_at)


def _fires_at_all(schedule: Schedule) -> bool:
    return schedule.next_fire_after(django_timezone.now()) is not None
