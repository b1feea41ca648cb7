"""Failed rows by cause: one page per scheduled model that groups its failed rows by the first
line of their error, with "retry all" and "cancel all" for each cause. Both go through the
QuerySet's own retry() and cancel() (one UPDATE, each row's history with the signed-in user as
the actor), on the failed rows whose error starts with that line."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, F, Q, QuerySet, Value
from django.db.models.functions import Concat, StrIndex, Substr
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path

from scheduling.ops.admin.audit import as_signed_in_user
from scheduling.rows.querysets import LateRetryError, ScheduledEventQuerySet
from scheduling.rows.states import Status

CAUSES_SHOWN = 50  # the most frequent; a long tail of one-off errors is for the changelist


def first_line() -> Any:
    """The error's first line (its cause), in SQL that PostgreSQL and SQLite both run."""
    end = StrIndex(Concat(F("last_error"), Value("\n")), Value("\n"))
    return Substr(F("last_error"), 1, end - 1)


def failure_causes(rows: QuerySet[Any], limit: int = CAUSES_SHOWN) -> list[dict[str, Any]]:
    """[{"cause": first line, "count": rows}], most frequent first."""
    failed = rows.filter(status=Status.FAILED).annotate(cause=first_line())
    grouped = failed.values("cause").annotate(count=Count("pk")).order_by("-count", "cause")
    return list(grouped[:limit])


def failed_with_cause(rows: ScheduledEventQuerySet[Any], cause: str) -> Any:
    same = Q(last_error=cause) | Q(last_error__startswith=cause + "\n")
    return rows.filter(same, status=Status.FAILED)


class FailureCausesMixin(admin.ModelAdmin):
    """Adds `<changelist>/causes/` to a scheduled model's admin."""

    causes_template = "admin/scheduling/causes.html"

    def get_urls(self) -> list[URLPattern]:
        name = f"{self.opts.app_label}_{self.opts.model_name}_causes"
        view = self.admin_site.admin_view(self.causes_view)
        return [path("causes/", view, name=name), *super().get_urls()]

    def causes_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            if not self.has_change_permission(request):
                raise PermissionDenied
            with as_signed_in_user(request):
                self.act_on_cause(request)
            return HttpResponseRedirect(request.path)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Failed {self.opts.verbose_name_plural} by cause",
            "causes": failure_causes(self.get_queryset(request)),
            "can_change": self.has_change_permission(request),
        }
        return TemplateResponse(request, self.causes_template, context)

    def act_on_cause(self, request: HttpRequest) -> None:
        cause = request.POST.get("cause", "")
        rows = failed_with_cause(self.get_queryset(request), cause)  # type: ignore[arg-type]
        noun = self.opts.verbose_name_plural
        if request.POST.get("do") == "cancel":
            reason = f"cancelled in the admin by {request.user.get_username()}: {cause}"
            count = rows.cancel(reason, include_failed=True)
            messages.success(request, f"Cancelled {count} {noun} failed with: {cause}")
            return
        try:
            count = rows.retry(allow_late=request.POST.get("allow_late") == "on")
        except LateRetryError as exc:
            messages.error(request, f"Nothing retried. {exc}")
            return
        messages.success(request, f"Back to pending: {count} {noun} failed with: {cause}")
