"""Admin for keyed jobs: each job with its runs inline, and every run with the framework's
actions (cancel, reschedule, shift, deliver now, retry). Jobs are created over the API; here
their payload and labels may be edited, through the same service as a PATCH (but a django.tasks
task's, fixed at enqueue)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Count, Min, Q, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from scheduling.delivery.publishing.targets import CallbackType
from scheduling.jobs.edits import runs_a_django_task
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.jobs.services import (
    JobError,
    JobFilter,
    check_labels,
    check_payload,
    job_cancel_many,
    job_patch,
)
from scheduling.ops.admin import AuditedAdmin
from scheduling.ops.admin.base import ScheduledEventAdmin, ScheduledEventInline, rows_changed
from scheduling.ops.admin.pauses import PauseBoxAdmin
from scheduling.rows.djangotasks import RUN_TASK
from scheduling.rows.states import Status


class JobForm(forms.ModelForm):
    class Meta:
        model = Job
        fields = ("payload", "labels")

    def clean_payload(self) -> Any:
        return self._checked("payload", check_payload)

    def clean_labels(self) -> Any:
        return self._checked("labels", check_labels)

    def _checked(self, name: str, check: Any) -> Any:
        try:
            return check(self.cleaned_data[name])
        except JobError as exc:
            raise forms.ValidationError(exc.message) from None


class TaskNameFilter(admin.SimpleListFilter):
    """Jobs that are django.tasks tasks (scheduling.jobs.backends), by the task's dotted path."""

    title = "django.tasks task"
    parameter_name = "task"
    job = ""  # the path from the listed model to its job

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        tasks = Job.objects.filter(callback__task=RUN_TASK).values_list("labels__task", flat=True)
        return [(name, name) for name in sorted(set(tasks.order_by()))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if not self.value():
            return queryset
        return queryset.filter(
            **{f"{self.job}callback__task": RUN_TASK, f"{self.job}labels__task": self.value()}
        )


class RunTaskNameFilter(TaskNameFilter):
    job = "job__"


class ScheduledJobRunInline(ScheduledEventInline):
    model = ScheduledJobRun


@admin.register(Job)
class JobAdmin(PauseBoxAdmin, AuditedAdmin):  # its saves and cancels change the job's runs
    form = JobForm
    change_list_template = "admin/scheduling/pause_change_list.html"  # the runs' pause
    list_display = ("key", "runs_status", "next_run", "runs", "target", "updated_at")
    list_filter = (TaskNameFilter,)
    search_fields = ("key",)
    date_hierarchy = "created_at"
    readonly_fields = ("key", "callback", "created_at", "updated_at")
    fields = ("key", "callback", "payload", "labels", "created_at", "updated_at")
    inlines = (ScheduledJobRunInline,)
    actions = ("cancel_jobs",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # jobs come from PUT /api/jobs/{key}/

    def paused_label(self) -> str:
        return str(ScheduledJobRun._meta.label_lower)  # pausing the runs pauses every job

    def get_readonly_fields(self, request: HttpRequest, obj: Job | None = None) -> Any:
        fixed = ("payload", "labels") if obj is not None and runs_a_django_task(obj) else ()
        return (*self.readonly_fields, *fixed)  # a task's arguments and path: fixed at enqueue

    def get_queryset(self, request: HttpRequest) -> QuerySet[Job]:
        # One join, counted three ways: the list's columns cost no query per job.
        pending, failed = Q(runs__status=Status.PENDING), Q(runs__status=Status.FAILED)
        return (
            super()
            .get_queryset(request)
            .annotate(
                run_count=Count("runs"),
                pending_runs=Count("runs", filter=pending),
                failed_runs=Count("runs", filter=failed),
                next_run_at=Min("runs__due_at", filter=pending),
            )
        )

    @admin.display(description="Status", ordering="-failed_runs")
    def runs_status(self, obj: Job) -> str:
        counts = [(obj.pending_runs, "pending"), (obj.failed_runs, "failed")]  # type: ignore[attr-defined]
        return ", ".join(f"{n} {word}" for n, word in counts if n) or "nothing pending"

    @admin.display(description="Next run", ordering="next_run_at")
    def next_run(self, obj: Job) -> Any:
        return getattr(obj, "next_run_at", None) or "-"

    @admin.display(description="Runs", ordering="run_count")
    def runs(self, obj: Job) -> str:
        url = reverse("admin:scheduling_jobs_scheduledjobrun_changelist")
        count = obj.run_count  # type: ignore[attr-defined]
        return format_html('<a href="{}?job__id__exact={}">{}</a>', url, obj.pk, count)

    def save_model(
        self, request: HttpRequest, obj: Job, form: forms.ModelForm, change: bool
    ) -> None:
        # Only what the form changed: the history names those fields, and a task's job
        # (whose form has none to edit) is left as enqueue() wrote it.
        job_patch(key=obj.key, **{name: form.cleaned_data[name] for name in form.changed_data})

    @admin.display(description="Callback")
    def target(self, obj: Job) -> str:
        callback = obj.callback
        if callback.get("type") == CallbackType.QUEUE:
            return f"queue {callback.get('queue')}"
        if callback.get("type") == CallbackType.RABBITMQ:
            return f"payload on {callback.get('data', {}).get('queue')}"
        return f"task {callback.get('task')} on {callback.get('queue')}"

    @admin.action(description="Cancel the pending runs of selected jobs", permissions=["change"])
    def cancel_jobs(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        selection = JobFilter(keys=list(queryset.values_list("key", flat=True)))
        reason = f"cancelled in the admin by {request.user.get_username()}"
        count = job_cancel_many(selection=selection, reason=reason)
        rows_changed(request, ScheduledJobRun._meta, "Cancelled", count)


class CallbackTypeFilter(admin.SimpleListFilter):
    title = "callback"
    parameter_name = "callback"

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return CallbackType.choices

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() in CallbackType.values:
            return queryset.filter(job__callback__type=self.value())
        return queryset


@admin.register(ScheduledJobRun)
class ScheduledJobRunAdmin(ScheduledEventAdmin):
    list_display = (*ScheduledEventAdmin.list_display, "job")
    list_filter = (*ScheduledEventAdmin.list_filter, CallbackTypeFilter, RunTaskNameFilter)
    list_select_related = ("job",)
    search_fields = ("job__key",)
