"""Admin for recurring schedules and their occurrences.

Schedules are saved through the model's save(), from the form and from the list's enabled
toggle alike, so the pending occurrence always follows the schedule. A schedule can fire
every second, so its page shows recent occurrences and a link rather than an inline.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone as django_timezone
from django.utils.html import escape, format_html, format_html_join

from scheduling.ops.admin import AuditedAdmin
from scheduling.ops.admin.base import STORABLE_DATETIMES, ScheduledEventAdmin, rows_changed
from scheduling.ops.admin.calendar_fields import NamesField
from scheduling.recurring.calendars import CalendarPolicy, PlannedFire, schedule_plan
from scheduling.recurring.cron import CronError, time_zone
from scheduling.recurring.jitter import JITTER_ERRORS, MAX_JITTER
from scheduling.recurring.models import RecurringSchedule, ScheduledOccurrence
from scheduling.recurring.policy_admin import (
    POLICY_FIELDSETS,
    POLICY_READ_ONLY,
    dst_outlook_html,
    schedule_state,
)
from scheduling.recurring.services import (
    occurrence_ensure,
    occurrence_skip,
    schedule_set_enabled,
    schedule_trigger,
)
from scheduling.recurring.templates import TemplateError, render, validate_template
from scheduling.rows.databases import database_of
from scheduling.rows.states import Status
from scheduling.time.calendars.rules import CalendarError

PREVIEW_COUNT = 10
# Their errors end the preview.
PREVIEW_FIELDS = ("cron", "timezone", "starts_at", "ends_at", "calendars", "calendar_policy")
# Used when given and valid, else the defaults: the DST outlook below the fire times reads them.
PREVIEW_POLICIES = ("dst_gap_policy", "dst_repeat_policy")
RECENT_COUNT = 10


class ScheduleForm(forms.ModelForm):
    calendars = NamesField(
        help_text="Calendar names, in order, e.g. public-holidays, weekends: the fire times "
        "they exclude are skipped or moved (calendar policy)."
    )
    # Not required: a form that leaves it out (a script, an older page) keeps the default.
    calendar_policy = forms.TypedChoiceField(
        choices=CalendarPolicy.choices, required=False, empty_value=CalendarPolicy.SKIP
    )
    jitter = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_JITTER,
        help_text=RecurringSchedule._meta.get_field("jitter").help_text,
        error_messages=JITTER_ERRORS,
    )

    def clean_jitter(self) -> int:
        return self.cleaned_data.get("jitter") or 0  # empty: no jitter

    class Meta:
        model = RecurringSchedule
        fields = ("calendars", "calendar_policy")  # the admin adds its fieldsets' fields


@admin.register(RecurringSchedule)
class RecurringScheduleAdmin(AuditedAdmin):  # its changes move or cancel occurrences
    form = ScheduleForm
    list_display = (
        "name",
        "cron",
        "timezone",
        "target",
        "enabled",
        "misfire_policy",
        "next_fire",
        "last_fired_at",
        "version",
        "state",  # policies: running, paused (the note), finished (max_fires)
    )
    list_editable = ("enabled",)
    list_filter = ("enabled", "misfire_policy", "overlap_policy", "timezone", "template_timezone")
    search_fields = ("name", "cron", "task", "queue")
    readonly_fields = (
        "version",
        "last_fired_at",
        "next_fire",
        "fire_preview",
        "recent_occurrences",
        "created_at",
        "updated_at",
        *POLICY_READ_ONLY,
    )
    fieldsets = (
        (None, {"fields": ("name", "enabled", "cron", "timezone", "fire_preview")}),
        ("Target", {"fields": ("task", "queue", "payload_template", "template_timezone")}),
        (
            "Timeline",
            {
                "fields": (
                    "starts_at",
                    "ends_at",
                    "misfire_policy",
                    "catchup_window",
                    "max_lateness",
                    "jitter",
                )
            },
        ),
        *POLICY_FIELDSETS,
        ("Calendars", {"fields": ("calendars", "calendar_policy")}),
        (
            "State",
            {
                "fields": (
                    "version",
                    "next_fire",
                    "last_fired_at",
                    "recent_occurrences",
                    "created_at",
                    "updated_at",
                )
            },
        ),
    )
    actions = ("enable", "disable", "trigger_now", "ensure_next")
    formfield_overrides = STORABLE_DATETIMES

    def get_queryset(self, request: HttpRequest) -> QuerySet[RecurringSchedule]:
        next_fire = ScheduledOccurrence.objects.filter(
            schedule=OuterRef("pk"), status=Status.PENDING, manual=False, catch_up=False
        ).values("due_at")[:1]
        return super().get_queryset(request).annotate(next_fire_at=Subquery(next_fire))

    @admin.display(description="State")
    def state(self, obj: RecurringSchedule) -> str:
        return schedule_state(obj)

    @admin.display(description="Target")
    def target(self, obj: RecurringSchedule) -> str:
        return f"task {obj.task}" if obj.task else f"queue {obj.queue}"

    @admin.display(description="Next fire", ordering="next_fire_at")
    def next_fire(self, obj: RecurringSchedule) -> Any:
        return getattr(obj, "next_fire_at", None) or "-"

    @admin.display(
        description=f"Next {PREVIEW_COUNT} fire times (as the calendars leave them), the first "
        "one's payload, and the fire times at the next DST changes"
    )
    def fire_preview(self, obj: RecurringSchedule) -> str:
        content = preview_list(obj) if obj.pk else "Enter a cron expression to see them."
        url = reverse("admin:scheduling_recurringschedule_preview")
        return format_html('<div class="fire-preview" data-url="{}">{}</div>', url, content)

    def get_urls(self) -> list[URLPattern]:
        preview = path(
            "preview/",
            self.admin_site.admin_view(self.preview_view),
            name="scheduling_recurringschedule_preview",
        )
        return [preview, *super().get_urls()]

    def preview_view(self, request: HttpRequest) -> HttpResponse:
        """The preview of the form's values, saved or not (the form's script asks for it)."""
        if not (self.has_add_permission(request) or self.has_change_permission(request)):
            raise PermissionDenied
        form = self.get_form(request)(data=request.GET)
        form.is_valid()
        errors = [
            (name, " ".join(str(message) for message in form.errors[name]))
            for name in PREVIEW_FIELDS
            if name in form.errors
        ]
        if errors:
            return HttpResponse(format_html_join("", "<p>{}: {}</p>", errors))
        given = (*PREVIEW_FIELDS, *(n for n in PREVIEW_POLICIES if n not in form.errors))
        values = {name: form.cleaned_data.get(name) for name in given}
        schedule = RecurringSchedule(**{k: v for k, v in values.items() if v is not None})
        # The name may clash with the saved schedule being edited: taken as typed, unchecked.
        schedule.name = request.GET.get("name", "")
        if "payload_template" in form.errors:
            error = " ".join(str(message) for message in form.errors["payload_template"])
            return HttpResponse(preview_list(schedule) + format_html("<p>payload: {}</p>", error))
        schedule.payload_template = form.cleaned_data.get("payload_template") or {}
        if "template_timezone" in form.errors:
            error = " ".join(str(message) for message in form.errors["template_timezone"])
            return HttpResponse(
                preview_list(schedule) + format_html("<p>template_timezone: {}</p>", error)
            )
        schedule.template_timezone = form.cleaned_data.get("template_timezone") or ""
        return HttpResponse(preview_list(schedule))

    class Media:
        js = ("scheduling/fire_preview.js",)

    @admin.display(description="Recent occurrences")
    def recent_occurrences(self, obj: RecurringSchedule) -> str:
        if obj.pk is None:
            return "-"
        rows = obj.occurrences.order_by("-due_at", "-pk")[:RECENT_COUNT]
        items = (
            (row.due_at.isoformat(), row.status, " (manual)" if row.manual else "") for row in rows
        )
        url = reverse(f"admin:{ScheduledOccurrence._meta.app_label}_scheduledoccurrence_changelist")
        return format_html(
            '<ul>{}</ul><a href="{}?schedule__id__exact={}">All occurrences</a>',
            format_html_join("", "<li>{} {}{}</li>", items),
            url,
            obj.pk,
        )

    @admin.action(description="Enable selected schedules", permissions=["change"])
    def enable(self, request: HttpRequest, queryset: QuerySet[RecurringSchedule]) -> None:
        changed = 0
        for schedule in queryset:
            try:
                changed += schedule_set_enabled(schedule=schedule, enabled=True)
            except ValidationError as exc:  # e.g. an @at schedule whose time has passed
                messages.error(request, f"{schedule}: {'; '.join(exc.messages)}")
        rows_changed(request, self.opts, "Enabled", changed)

    @admin.action(description="Disable selected schedules", permissions=["change"])
    def disable(self, request: HttpRequest, queryset: QuerySet[RecurringSchedule]) -> None:
        changed = sum(schedule_set_enabled(schedule=s, enabled=False) for s in queryset)
        rows_changed(request, self.opts, "Disabled", changed)

    @admin.action(description="Fire selected schedules now, once", permissions=["change"])
    def trigger_now(self, request: HttpRequest, queryset: QuerySet[RecurringSchedule]) -> None:
        for schedule in queryset:
            schedule_trigger(schedule=schedule)
        rows_changed(request, self.opts, "Triggered", len(queryset))

    @admin.action(description="Materialise a missing next occurrence", permissions=["change"])
    def ensure_next(self, request: HttpRequest, queryset: QuerySet[RecurringSchedule]) -> None:
        for schedule in queryset:
            with transaction.atomic(using=database_of(RecurringSchedule)):
                locked = RecurringSchedule.objects.select_for_update().get(pk=schedule.pk)
                occurrence_ensure(schedule=locked)
        messages.success(request, "Every selected enabled schedule has its next occurrence.")


def preview_list(schedule: RecurringSchedule) -> str:
    """The next fire times in the schedule's own time zone, as an HTML list, with what the
    calendars skip or move; the first one's payload; the fire times at the next DST changes."""
    try:
        zone = time_zone(schedule.timezone)
        plan = schedule_plan(schedule, count=PREVIEW_COUNT, after=django_timezone.now())
    except (CronError, CalendarError) as exc:
        return escape(str(exc))
    times = [planned.at for planned in plan if planned.at is not None]
    if not times:
        return escape("No more fire times.")
    items = ((planned.status, plan_line(planned, zone)) for planned in plan)
    listed = format_html("<ol>{}</ol>", format_html_join("", '<li class="{}">{}</li>', items))
    return listed + payload_preview(schedule, times[0]) + dst_outlook_html(schedule)


def plan_line(planned: PlannedFire, zone: Any) -> str:
    """One fire time of the preview, as the schedule's calendars leave it."""

    def local(instant: datetime) -> str:
        return instant.astimezone(zone).strftime("%a %Y-%m-%d %H:%M:%S %Z")

    if planned.at is None and planned.span is not None:
        return f"{local(planned.planned)}: skipped (excluded until {local(planned.span[1])})"
    if planned.at is not None and planned.status == "moved":
        return f"{local(planned.at)} (moved from {local(planned.planned)})"
    return local(planned.planned)


def payload_preview(schedule: RecurringSchedule, fire_time: Any) -> str:
    """The payload template rendered as the sweep will publish it at `fire_time`."""
    try:
        validate_template(schedule.payload_template)
        payload = render(
            schedule.payload_template,
            fire_time=fire_time,
            tz=schedule.variables_timezone,
            schedule_name=schedule.name,
        )
    except TemplateError as exc:
        return format_html("<p>payload: {}</p>", exc)
    text = json.dumps(payload, indent=2, ensure_ascii=False)
    # No <p>: in this box a paragraph is a refusal (the form's script and tests look for one).
    return format_html(
        '<figure class="payload-preview"><figcaption>Payload at the first:</figcaption>'
        "<pre>{}</pre></figure>",
        text,
    )


@admin.register(ScheduledOccurrence)
class ScheduledOccurrenceAdmin(ScheduledEventAdmin):
    list_display = (
        *ScheduledEventAdmin.list_display,
        "schedule",
        "fire_id",
        "manual",
        "catch_up",
        "schedule_version",
    )
    list_filter = (*ScheduledEventAdmin.list_filter, "manual", "catch_up")
    list_select_related = ("schedule",)
    search_fields = ("schedule__name",)
    # Cancelling would end the schedule's timeline; skipping cancels and moves to the next.
    # Retrying could make a second pending occurrence; trigger the schedule instead.
    actions: Any = ("skip_rows", "reschedule_rows", "shift_rows", "deliver_now")

    @admin.action(description="Skip selected pending occurrences", permissions=["change"])
    def skip_rows(self, request: HttpRequest, queryset: QuerySet[ScheduledOccurrence]) -> None:
        pending = queryset.filter(status=Status.PENDING)
        skipped = sum(occurrence_skip(occurrence=occurrence) for occurrence in pending)
        rows_changed(request, self.opts, "Skipped", skipped)
