"""Admin for recurring schedules and their occurrences.

Schedules are saved through the model's save(), from the form and from the list's enabled
toggle alike, so the pending occurrence always follows the schedule. A schedule can fire
every second, so its page shows recent occurrences and a link rather than an inline.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from scheduling.admin import STORABLE_DATETIMES, ScheduledEventAdmin, rows_changed
from scheduling.base import Status
from scheduling.cron import CronError, time_zone
from scheduling.recurring import (
    RecurringSchedule,
    ScheduledOccurrence,
    occurrence_ensure,
    occurrence_skip,
    schedule_preview,
    schedule_set_enabled,
    schedule_trigger,
)

PREVIEW_COUNT = 10
RECENT_COUNT = 10


@admin.register(RecurringSchedule)
class RecurringScheduleAdmin(admin.ModelAdmin):
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
    )
    list_editable = ("enabled",)
    list_filter = ("enabled", "misfire_policy", "timezone")
    search_fields = ("name", "cron", "task", "queue")
    readonly_fields = (
        "version",
        "last_fired_at",
        "next_fire",
        "fire_preview",
        "recent_occurrences",
        "created_at",
        "updated_at",
    )
    fieldsets = (
        (None, {"fields": ("name", "enabled", "cron", "timezone", "fire_preview")}),
        ("Target", {"fields": ("task", "queue", "payload_template")}),
        ("Timeline", {"fields": ("starts_at", "ends_at", "misfire_policy", "max_lateness")}),
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
            schedule=OuterRef("pk"), status=Status.PENDING, manual=False
        ).values("due_at")[:1]
        return super().get_queryset(request).annotate(next_fire_at=Subquery(next_fire))

    @admin.display(description="Target")
    def target(self, obj: RecurringSchedule) -> str:
        return f"task {obj.task}" if obj.task else f"queue {obj.queue}"

    @admin.display(description="Next fire", ordering="next_fire_at")
    def next_fire(self, obj: RecurringSchedule) -> Any:
        return getattr(obj, "next_fire_at", None) or "-"

    @admin.display(description=f"Next {PREVIEW_COUNT} fire times (saved schedule)")
    def fire_preview(self, obj: RecurringSchedule) -> str:
        if obj.pk is None:
            return "Shown once the schedule is saved."
        try:
            zone = time_zone(obj.timezone)
            times = schedule_preview(schedule=obj, count=PREVIEW_COUNT)
        except CronError as exc:
            return str(exc)
        if not times:
            return "No more fire times."
        local = ((t.astimezone(zone).strftime("%a %Y-%m-%d %H:%M:%S %Z"),) for t in times)
        return format_html("<ol>{}</ol>", format_html_join("", "<li>{}</li>", local))

    @admin.display(description="Recent occurrences")
    def recent_occurrences(self, obj: RecurringSchedule) -> str:
        if obj.pk is None:
            return "-"
        rows = obj.occurrences.order_by("-due_at", "-pk")[:RECENT_COUNT]
        items = (
            (row.due_at.isoformat(), row.status, " (manual)" if row.manual else "") for row in rows
        )
        url = reverse("admin:scheduling_scheduledoccurrence_changelist")
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
            with transaction.atomic():
                locked = RecurringSchedule.objects.select_for_update().get(pk=schedule.pk)
                occurrence_ensure(schedule=locked)
        messages.success(request, "Every selected enabled schedule has its next occurrence.")


@admin.register(ScheduledOccurrence)
class ScheduledOccurrenceAdmin(ScheduledEventAdmin):
    list_display = (
        *ScheduledEventAdmin.list_display,
        "schedule",
        "fire_id",
        "manual",
        "schedule_version",
    )
    list_filter = (*ScheduledEventAdmin.list_filter, "manual")
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
