"""The calendars' admin: lists one item a line, the next excluded spans on the page, and a
delete refused while a schedule or another calendar uses the calendar."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone as django_timezone
from django.utils.html import format_html, format_html_join

from scheduling.ops.admin.audit import AuditedAdmin
from scheduling.ops.admin.calendar_fields import LinesField, NamesField, StepsField
from scheduling.time.calendars.models import EDITABLE_FIELDS, Calendar, named_calendar
from scheduling.time.calendars.parsing import parse_timezone
from scheduling.time.calendars.references import calendar_users
from scheduling.time.calendars.rules import CalendarError, CalendarRules

SPANS_SHOWN = 10


class CalendarForm(forms.ModelForm):
    holidays = LinesField(help_text="One date a line, e.g. 2026-12-25.")
    holiday_rules = LinesField(
        help_text="One RFC 5545 RRULE a line, e.g. FREQ=YEARLY;BYMONTH=11;BYDAY=4TH "
        "(the 4th Thursday of November)."
    )
    daily_windows = LinesField(help_text="One window a line, e.g. 22:00-07:00.")
    weekdays = NamesField(help_text="Day names, e.g. SAT, SUN.")
    composition = StepsField(
        help_text="One step a line, in order: 'include <calendar>' adds what it excludes, "
        "'exclude <calendar>' takes it away again."
    )

    class Meta:
        model = Calendar
        fields = EDITABLE_FIELDS


class CalendarAdmin(AuditedAdmin):  # saving one recomputes the fire times of its schedules
    form = CalendarForm
    list_display = ("name", "timezone", "description", "next_span", "updated_at")
    search_fields = ("name", "description")
    list_filter = ("timezone",)
    readonly_fields = ("excluded_spans", "created_at", "updated_at")
    fields = (*EDITABLE_FIELDS, "excluded_spans", "created_at", "updated_at")

    def save_model(self, request: HttpRequest, obj: Calendar, form: Any, change: bool) -> None:
        obj.viewer = request.user  # a refusal names only what this user may view
        super().save_model(request, obj, form, change)

    def delete_model(self, request: HttpRequest, obj: Calendar) -> None:
        obj.viewer = request.user
        super().delete_model(request, obj)

    @admin.display(description="Next excluded span")
    def next_span(self, obj: Calendar) -> str:
        # The list's calendars built from one read of them all, not one read a row.
        shown = span_lines(obj, 1, rules=named_calendar)
        return shown[0] if shown else "-"

    @admin.display(description=f"Next {SPANS_SHOWN} excluded spans")
    def excluded_spans(self, obj: Calendar) -> str:
        if obj.pk is None:
            return "Save to see them."
        lines = span_lines(obj, SPANS_SHOWN)
        if not lines:
            return "None within the horizon."
        return format_html(
            "<ol>{}</ol>", format_html_join("", "<li>{}</li>", ((line,) for line in lines))
        )

    def get_deleted_objects(self, objs: Sequence[Any] | QuerySet[Any], request: HttpRequest) -> Any:
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        # Schedules and calendars name a calendar (no foreign key): listed as protecting it.
        users = [
            f"{calendar}: used by {user}"
            for calendar in objs
            for user in calendar_users.of(calendar.name, request.user)
        ]
        return deleted, counts, perms_needed, [*protected, *users]


def span_lines(
    calendar: Calendar,
    count: int,
    now: datetime | None = None,
    rules: Callable[[str], CalendarRules] | None = None,
) -> list[str]:
    """The next excluded spans in the calendar's own time zone, or why there are none; `rules`
    finds a calendar's rules by name (default: the calendar's own, as it stands)."""
    try:
        found = calendar.rules() if rules is None else rules(calendar.name)
        spans = found.spans(now or django_timezone.now(), count)
    except CalendarError as exc:
        return [str(exc)]
    zone = parse_timezone(calendar.timezone)
    return [f"{_local(start, zone)} to {_local(end, zone)}" for start, end in spans]


def _local(instant: datetime, zone: Any) -> str:
    return instant.astimezone(zone).strftime("%a %Y-%m-%d %H:%M %Z")
