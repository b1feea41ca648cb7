"""Admin building blocks for every scheduled model: the changelist, its actions, an inline.

Each action is ONE bulk QuerySet call over the selected rows (all filtered rows with "select
all"), so it changes only pending rows (retry: failed or expired ones) and reports how many
changed. Rows are never edited through the change form: a form save writes every column and
could undo a concurrent sweep's `delivered`, so all scheduling fields are read-only there, and
the page shows the row's timeline instead. Every view records the signed-in user as the actor
of what it changes (AuditedAdmin).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin import widgets as admin_widgets
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import display_for_value
from django.db import models
from django.db.models import QuerySet
from django.db.models.functions import Coalesce
from django.forms import ModelForm
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils import timezone

from scheduling.ops.admin.audit import AuditedAdmin
from scheduling.ops.admin.causes import FailureCausesMixin
from scheduling.ops.admin.pauses import PauseBoxAdmin
from scheduling.ops.admin.timeline import TimelineLine, timeline_lines, when
from scheduling.ops.admin.wording import lateness, short_duration
from scheduling.ops.forms import AwareDateTimeFormField
from scheduling.rows.models import SCHEDULING_FIELDS, ScheduledEvent
from scheduling.rows.querysets import LateRetryError, ScheduledEventQuerySet
from scheduling.rows.quiet.described import quiet_hours
from scheduling.rows.quiet.holds import has_quiet_hours
from scheduling.rows.states import LIFECYCLE_LABELS, LIFECYCLE_STATES, Status
from scheduling.time.parsing import parse_shift
from scheduling.time.times import storable_utc

ACTION_TITLES = {"reschedule_rows": "Reschedule", "shift_rows": "Shift"}
LATE_ROWS_SHOWN = 20  # on the retry confirmation, oldest business time first


@dataclass(frozen=True)
class LateRow:
    row: ScheduledEvent
    lateness: str  # "sent 3 days late", if retried now
    past_max_lateness: bool


class RescheduleForm(forms.Form):
    due_at = AwareDateTimeFormField(
        label="New due time",
        help_text="ISO 8601 with an offset or Z, e.g. 2026-12-24T14:00:00Z or "
        "2026-12-24T15:00:00+01:00.",
    )


class StorableSplitDateTimeField(forms.SplitDateTimeField):
    """The admin's date and time inputs, refusing what the database cannot store."""

    def clean(self, value: Any) -> datetime | None:
        cleaned = super().clean(value)
        if cleaned is None:
            return None
        try:
            return storable_utc(cleaned)
        except ValueError as exc:
            raise forms.ValidationError(str(exc), code="out_of_range") from None


# For a domain admin's `formfield_overrides`: every datetime it edits is checked on the form,
# before save_model hands it to a service.
STORABLE_DATETIMES: dict[type[models.Field], dict[str, Any]] = {
    models.DateTimeField: {
        "form_class": StorableSplitDateTimeField,
        "widget": admin_widgets.AdminSplitDateTime,
    }
}


class ShiftForm(forms.Form):
    delta = forms.CharField(
        label="Shift by",
        help_text="An ISO 8601 duration, e.g. P7D (a week later) or -PT2H (two hours earlier).",
    )

    def clean_delta(self) -> timedelta:
        try:
            value = parse_shift(self.cleaned_data["delta"].strip())
        except ValueError as exc:
            raise forms.ValidationError(str(exc), code="too_large") from None
        if value is None:
            raise forms.ValidationError("Enter an ISO 8601 duration, e.g. P7D or -PT2H.")
        if not value:
            raise forms.ValidationError("The duration must not be zero.")
        return value


ERROR_COLUMN = 60  # characters of last_error a changelist shows


class LifecycleFilter(admin.SimpleListFilter):
    """A row's place in its lifecycle (pending, awaiting handling, handled, failed...), which
    the status alone does not tell: delivered rows are awaiting handling or handled."""

    title = "lifecycle"
    parameter_name = "lifecycle"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return list(LIFECYCLE_LABELS.items())

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        state = self.value()
        if state is None:
            return queryset
        if state not in LIFECYCLE_STATES:
            raise IncorrectLookupParameters(f"Unknown lifecycle state {state!r}")
        return cast(ScheduledEventQuerySet[Any], queryset).lifecycle(state)


def in_flight_line(row: ScheduledEvent) -> list[TimelineLine]:
    """The timeline's last line while an at-most-once effect runs (nothing is logged for it)."""
    if row.lifecycle != "in_flight":
        return []
    assert row.effect_started_at is not None
    note = "the effect began and has not reported back"
    label = LIFECYCLE_LABELS["in_flight"]
    return [
        TimelineLine(
            when(row.effect_started_at),
            "in_flight",
            label,
            row.attempts,
            row.version,
            "worker",
            [note],
        )
    ]


def rows_changed(request: HttpRequest, opts: Any, verb: str, count: int) -> None:
    noun = opts.verbose_name if count == 1 else opts.verbose_name_plural
    messages.success(request, f"{verb} {count} {noun}.")


class ScheduledEventAdmin(PauseBoxAdmin, FailureCausesMixin, AuditedAdmin):
    """Base admin for a ScheduledEvent subclass; subclasses extend the tuples, e.g.

    list_display = (*ScheduledEventAdmin.list_display, "customer")

    The changelist searches the admin's `search_fields`, or else the model's own (the business
    fields a host lists on its scheduled model, e.g. the customer's email).
    """

    list_display: Any = ("event_id", "state", "due_at", "version", "attempts", "error")
    # The lifecycle filter alone: a "status" filter beside it would offer "Delivered" for rows
    # the rest of the admin calls "Handled" or "Awaiting handling".
    list_filter: ClassVar[Any] = (LifecycleFilter,)
    date_hierarchy = "due_at"
    # A search or a filter shows "N results" without counting the whole table beside it (a scan
    # of every row).
    show_full_result_count = False
    # Adds a "Needs attention" link (the page of failed rows of every model) to the list, and
    # the model's delivery pause (PauseBoxAdmin).
    change_list_template = "admin/scheduling/change_list.html"
    readonly_fields: ClassVar[Any] = SCHEDULING_FIELDS
    exclude: ClassVar[Any] = ("status",)  # shown as `state`: see get_readonly_fields
    actions = ("cancel_rows", "reschedule_rows", "shift_rows", "deliver_now", "retry_rows")
    action_form_template = "admin/scheduling/action_form.html"  # reschedule, shift
    late_retry_template = "admin/scheduling/late_retry.html"
    change_form_template = "admin/scheduling/change_form.html"  # the timeline, then the fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # rows are created by the domain's services, with their entity

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # The business time (business_due_at, or due_at while the framework has not moved it)
        # beside due_at, rather than a business_due_at that is mostly empty.
        names = [field.name for field in self.model._meta.fields]
        # The status as the list and its filter word it ("Handled", never "Delivered").
        replaced = {"business_due_at": "business_time", "status": "state"}
        shown: list[Any] = [replaced.get(name, name) for name in names]
        return [*shown, quiet_hours] if has_quiet_hours(self.model) else shown

    def get_search_fields(self, request: HttpRequest) -> Any:
        return self.search_fields or getattr(self.model, "search_fields", ())

    @admin.display(description="Row", ordering="pk")
    def row(self, obj: ScheduledEvent) -> str:
        """`12 v3`: the event id without its model's label, which the page already names."""
        return f"{obj.pk} v{obj.version}"

    @admin.display(description="Status", ordering="status")
    def state(self, obj: ScheduledEvent) -> str:
        """The lifecycle state, the word the lifecycle filter uses: a delivered row reads
        "Handled", "Awaiting handling" or "In flight", never "Delivered"."""
        return LIFECYCLE_LABELS[obj.lifecycle]

    @admin.display(description="Last error", ordering="last_error")
    def error(self, obj: ScheduledEvent) -> str:
        """The error's first line, cut short so the business columns keep their room; the
        row's page has it whole."""
        first_line = obj.last_error.split("\n", 1)[0]
        return first_line if len(first_line) <= ERROR_COLUMN else f"{first_line[:ERROR_COLUMN]}…"

    @admin.display(description="business time")
    def business_time(self, obj: ScheduledEvent) -> str:
        return str(display_for_value(obj.business_time, self.get_empty_value_display()))

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Any = None,
    ) -> Any:
        if obj is not None:
            latest = timeline_lines(obj)
            context["timeline"] = [*latest.lines, *in_flight_line(obj)]
            context["timeline_latest"] = latest
        return super().render_change_form(request, context, add, change, form_url, obj)

    def save_model(self, request: HttpRequest, obj: Any, form: ModelForm, change: bool) -> None:
        """Nothing: every field is read-only, and a save would write every column back (undoing
        a concurrent sweep's or worker's change) without an entry in the row's history."""

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> Any:
        # Nothing on the page is editable; changes go through the changelist's actions.
        hidden = {"show_save": False, "show_save_and_continue": False}
        return super().change_view(
            request, object_id, form_url, {**hidden, **(extra_context or {})}
        )

    @admin.action(description="Cancel selected pending rows", permissions=["change"])
    def cancel_rows(self, request: HttpRequest, queryset: QuerySet[ScheduledEvent]) -> None:
        count = queryset.cancel(f"cancelled in the admin by {request.user.get_username()}")  # type: ignore[attr-defined]
        rows_changed(request, self.opts, "Cancelled", count)

    @admin.action(description="Reschedule selected pending rows to…", permissions=["change"])
    def reschedule_rows(self, request: HttpRequest, queryset: QuerySet[ScheduledEvent]) -> Any:
        return self.with_form(request, queryset, RescheduleForm, "reschedule_rows", self._to)

    @admin.action(description="Shift selected pending rows by…", permissions=["change"])
    def shift_rows(self, request: HttpRequest, queryset: QuerySet[ScheduledEvent]) -> Any:
        return self.with_form(request, queryset, ShiftForm, "shift_rows", self._by)

    @admin.action(description="Deliver selected pending rows now", permissions=["change"])
    def deliver_now(self, request: HttpRequest, queryset: QuerySet[ScheduledEvent]) -> None:
        rows_changed(request, self.opts, "Made due now:", queryset.deliver_now())  # type: ignore[attr-defined]

    @admin.action(description="Retry selected failed or expired rows", permissions=["change"])
    def retry_rows(self, request: HttpRequest, queryset: QuerySet[ScheduledEvent]) -> Any:
        """Rows past the model's max_lateness are retried only once the user confirms, on a
        page that says how late they would be sent."""
        confirmed = request.POST.get("late") == "confirmed"
        try:
            count = queryset.retry(allow_late=confirmed)  # type: ignore[attr-defined]
        except LateRetryError:
            return self.late_retry_response(request, queryset)
        rows_changed(request, self.opts, "Back to pending:", count)
        return None

    def _to(self, request: HttpRequest, queryset: Any, data: dict[str, Any]) -> None:
        rows_changed(request, self.opts, "Rescheduled", queryset.reschedule(data["due_at"]))

    def _by(self, request: HttpRequest, queryset: Any, data: dict[str, Any]) -> None:
        rows_changed(request, self.opts, "Shifted", queryset.shift(data["delta"]))

    def with_form(
        self,
        request: HttpRequest,
        queryset: QuerySet[ScheduledEvent],
        form_class: type[forms.Form],
        action: str,
        apply: Callable[[HttpRequest, Any, dict[str, Any]], None],
    ) -> TemplateResponse | None:
        """Show the action's form; once it is submitted and valid, apply it (one UPDATE)."""
        form = form_class(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            apply(request, queryset, form.cleaned_data)
            return None  # back to the changelist, which shows the message
        return self.action_form_response(request, form, action)

    def action_form_response(
        self, request: HttpRequest, form: forms.Form, action: str
    ) -> TemplateResponse:
        context = {**self.selection_context(request, action), "form": form}
        return TemplateResponse(request, self.action_form_template, context)

    def late_retry_response(
        self, request: HttpRequest, queryset: QuerySet[ScheduledEvent]
    ) -> TemplateResponse:
        """The confirmation: the rows that would be sent latest, each with how late."""
        retryable = queryset.filter(status__in=[Status.FAILED, Status.EXPIRED])
        max_lateness: timedelta = getattr(self.model, "max_lateness", None) or timedelta(0)
        shown = retryable.order_by(Coalesce("business_due_at", "due_at"), "pk")[:LATE_ROWS_SHOWN]
        now = timezone.now()
        late_rows = [
            LateRow(row, lateness("sent", (now - row.business_time).total_seconds()), past)
            for row in shown
            for past in [now - row.business_time > max_lateness]
        ]
        context = {
            **self.selection_context(request, "retry_rows"),
            "title": "Retry rows past their lateness?",
            "max_lateness": short_duration(max_lateness),
            "late_rows": late_rows,
            "more": retryable.count() - len(late_rows) if len(late_rows) == LATE_ROWS_SHOWN else 0,
        }
        return TemplateResponse(request, self.late_retry_template, context)

    def selection_context(self, request: HttpRequest, action: str) -> dict[str, Any]:
        """What an action's intermediate page needs to post the same selection back."""
        select_across = request.POST.get("select_across") in ("1", "True", "true")
        selected = request.POST.getlist(helpers.ACTION_CHECKBOX_NAME)
        return {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": ACTION_TITLES.get(action, ""),
            "action": action,
            "selected": selected,
            "select_across": "1" if select_across else "0",
            "checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "selection": "All rows matching the current filters are selected."
            if select_across
            else f"{len(selected)} selected.",
        }


class ScheduledEventInline(admin.TabularInline):
    """Read-only list of an entity's scheduled rows; set `model` (and `fk_name` if needed)."""

    fields: ClassVar[Any] = ("due_at", "status", "version", "delivered_at", "cancel_reason")
    readonly_fields: ClassVar[Any] = fields
    extra = 0
    can_delete = False
    show_change_link = True
    ordering = ("due_at",)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
