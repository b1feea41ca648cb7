"""The stored calendar. Its lists hold text (dates, RRULEs, HH:MM-HH:MM windows, day names,
composition steps) so the API, the admin and a fixture write the same JSON; parsing.py checks
them and rules.py evaluates them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import models, transaction

from scheduling.time.calendars.parsing import FORMS, PARSERS, field_errors, normalised
from scheduling.time.calendars.references import Viewer, calendar_users
from scheduling.time.calendars.rules import CalendarError, CalendarRules

LIST_FIELDS = tuple(PARSERS)
EDITABLE_FIELDS = ("name", "description", "timezone", *LIST_FIELDS)


class Calendar(models.Model):
    name = models.SlugField(max_length=100, unique=True)
    description = models.CharField(max_length=200, blank=True, default="")
    timezone = models.CharField(max_length=64, default="UTC", help_text=FORMS["timezone"])
    holidays = models.JSONField(default=list, blank=True, help_text=FORMS["holidays"])
    holiday_rules = models.JSONField(default=list, blank=True, help_text=FORMS["holiday_rules"])
    daily_windows = models.JSONField(default=list, blank=True, help_text=FORMS["daily_windows"])
    weekdays = models.JSONField(default=list, blank=True, help_text=FORMS["weekdays"])
    composition = models.JSONField(
        default=list,
        blank=True,
        help_text="In order, after this calendar's own days and windows: include adds what "
        "another calendar excludes, exclude takes it away again. " + FORMS["composition"],
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    _rules: CalendarRules | None = None
    # Who asks for a save or a delete (the API's or the admin's user): a refusal names what
    # uses the calendar only where they may view it. None (code): everything is named.
    viewer: Viewer | None = None

    class Meta:
        # Explicit, as EventHistory's: the core app's models live in its packages.
        app_label = "scheduling"
        db_table = "scheduling_calendar"
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.clean()
        with transaction.atomic():
            self._refuse_rename_in_use()
            super().save(*args, **kwargs)
        self._rules = None
        forget_named()
        transaction.on_commit(forget_named)  # a reader may have kept the old one meanwhile

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        users = calendar_users.of(self.name, self.viewer)
        if users:
            raise ValidationError({"name": f"{self.name} is in use by {', '.join(users)}."})
        deleted = super().delete(*args, **kwargs)
        forget_named()
        return deleted

    def clean(self) -> None:
        errors = calendar_errors(self)
        if errors:
            raise ValidationError(errors)
        for field in LIST_FIELDS:
            setattr(self, field, normalised(field, getattr(self, field)))

    def _refuse_rename_in_use(self) -> None:
        if self.pk is None:
            return
        stored = Calendar.objects.filter(pk=self.pk).values_list("name", flat=True).first()
        if stored is None or stored == self.name:
            return
        users = calendar_users.of(stored, self.viewer)
        if users:
            raise ValidationError(
                {"name": f"{stored} cannot be renamed while in use by {', '.join(users)}."}
            )

    def rules(self) -> CalendarRules:
        """The calendar as pure rules, with the stored calendars it composes."""
        from scheduling.time.calendars.store import calendar_rules

        if self._rules is None:
            self._rules = calendar_rules(self)
        return self._rules

    def excluded_span(self, at: datetime) -> tuple[datetime, datetime] | None:
        """The excluded span holding the aware `at`, as UTC [start, end); None if allowed."""
        return self.rules().excluded_span(at)

    def next_allowed(self, at: datetime) -> datetime:
        """`at` itself if allowed, else the end of the excluded span holding it."""
        return self.rules().next_allowed(at)


def calendar_errors(calendar: Calendar) -> dict[str, str]:
    """Every problem by field, each naming the accepted form; empty when it can be saved."""
    from scheduling.time.calendars.store import calendar_rules

    errors = {}
    try:
        validate_slug(calendar.name)
    except ValidationError as exc:
        errors["name"] = "; ".join(exc.messages)
    errors.update(field_errors({name: getattr(calendar, name) for name in FORMS}))
    if not errors:
        try:
            calendar_rules(calendar)
        except CalendarError as exc:
            errors["composition"] = f"{exc}; enter {FORMS['composition']}."
    return errors


def forget_named() -> None:
    from scheduling.time.calendars.store import forget_named

    forget_named()


def _composing_calendars(name: str) -> list[str]:
    from scheduling.time.calendars.store import composed_by

    return [f"calendar {other}" for other in composed_by(name)]


calendar_users.add(_composing_calendars, permission="scheduling.view_calendar", noun="calendar")
