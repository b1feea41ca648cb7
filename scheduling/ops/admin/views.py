"""The "needs attention" page, for every scheduled model on one admin page: late models (the
oldest due row past SCHEDULING_HEALTH_MAX_LATENESS, as /healthz), rows not handled within the
handling timeout (a stalled worker), and failed rows.

`attention_urls(site)` are its URL patterns, at `<admin>/scheduling/attention/` (URL name
`admin:scheduling_attention`): a SchedulingAdminSiteMixin site lists them in its get_urls;
`add_attention_url(site)` adds them to any other site by wrapping its get_urls, as
SchedulingConfig.ready() does for the default site (unless SCHEDULING_ADMIN_PAGES is False).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, URLResolver, path, reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.utils.text import Truncator, capfirst

from scheduling.delivery import metrics
from scheduling.delivery.pauses.services import paused_labels
from scheduling.ops import health
from scheduling.ops.admin.alarms import ModelAlarms, model_alarms
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.querysets import ScheduledEventQuerySet
from scheduling.rows.registry import scheduled_models

ATTENTION_ROWS = 50  # the newest failed rows shown per model; the changelist has them all
ERROR_CHARS = 200


@dataclass(frozen=True)
class FailedRow:
    event_id: str
    url: str
    due_at: datetime
    attempts: int
    last_error: str


@dataclass(frozen=True)
class ModelAttention:
    model: str  # "<app_label>.<model_name>"
    label: str
    failed: int
    awaiting: int | None  # None: the model's events end at publishing, nothing awaits handling
    rows: list[FailedRow]
    failed_url: str
    awaiting_url: str
    alarms: ModelAlarms
    due: int  # due pending rows (counted up to COUNT_CAP)
    due_url: str  # the changelist of the rows due at the page's time
    not_handled_url: str  # the changelist of the rows awaiting handling past the timeout
    stuck_in_flight: int  # at-most-once rows in flight past the timeout (of not_handled)
    stuck_url: str  # their changelist

    @property
    def late(self) -> bool:
        return self.alarms.late_seconds is not None

    @property
    def not_handled(self) -> int:
        return self.alarms.not_handled or 0


def prepend_urls(
    site: admin.AdminSite, marker: str, pages: Callable[[], list[URLPattern | URLResolver]]
) -> bool:
    """Put `pages` before the site's own URLs, once per site and `marker`; True if it did.

    First, because the site's catch-all patterns would otherwise answer those paths.
    """
    if getattr(site, marker, False):
        return False
    site_urls = site.get_urls
    site.get_urls = lambda: [*pages(), *site_urls()]  # type: ignore[method-assign]
    setattr(site, marker, True)
    return True


def add_attention_url(site: admin.AdminSite | None = None) -> None:
    """Add the page to `site` (default: django.contrib.admin.site); adding it twice does nothing."""
    site = site or admin.site
    prepend_urls(site, "scheduling_attention_added", lambda: attention_urls(site))


def attention_urls(site: admin.AdminSite) -> list[URLPattern | URLResolver]:
    def view(request: HttpRequest) -> HttpResponse:
        return attention_view(request, site)

    return [path("scheduling/attention/", site.admin_view(view), name="scheduling_attention")]


def attention_view(request: HttpRequest, site: admin.AdminSite) -> HttpResponse:
    """Staff only (the site's admin_view); each model only for users who may view it."""
    request.current_app = site.name
    now = timezone.now()
    paused = paused_labels()
    groups = [
        model_attention(request, site, model, now, paused=model._meta.label_lower in paused)
        for model in scheduled_models()
        if site.is_registered(model) and site.get_model_admin(model).has_view_permission(request)
    ]
    groups.sort(key=lambda group: (-group.late, -group.not_handled, -group.failed, group.label))
    context = {
        **site.each_context(request),
        "title": "Needs attention",
        "groups": groups,
        "late": [group for group in groups if group.late],
        "not_handled": [group for group in groups if group.not_handled],
        "failing": [group for group in groups if group.failed],
        "row_limit": ATTENTION_ROWS,
        "max_lateness": health.max_lateness(),
        "count_cap": metrics.COUNT_CAP,
    }
    return TemplateResponse(request, "admin/scheduling/attention.html", context)


def model_attention(
    request: HttpRequest,
    site: admin.AdminSite,
    model: type[ScheduledEvent],
    now: datetime,
    *,
    paused: bool = False,
) -> ModelAttention:
    # The ModelAdmin's own queryset: a host that narrows what its admin lists narrows this too.
    rows = cast(
        ScheduledEventQuerySet[Any], site.get_model_admin(model).get_queryset(request).order_by()
    )
    failed = rows.lifecycle("failed")
    opts = model._meta
    changelist = reverse(
        f"admin:{opts.app_label}_{opts.model_name}_changelist", current_app=site.name
    )
    newest = failed.order_by("-updated_at", "-pk")[:ATTENTION_ROWS]
    # Lateness is the model's, as /healthz has it; the counts are of the rows this admin lists.
    snapshot = metrics.snapshot(model)
    alarms = model_alarms(rows, snapshot, now, paused=paused)
    return ModelAttention(
        model=opts.label_lower,
        label=f"{capfirst(opts.verbose_name_plural)} ({opts.app_config.verbose_name})",
        failed=failed.count(),
        awaiting=rows.awaiting_handling().count() if model.get_awaits_handling() else None,
        rows=[failed_row(row, site) for row in newest],
        failed_url=f"{changelist}?lifecycle=failed",
        awaiting_url=f"{changelist}?lifecycle=awaiting_handling",
        alarms=alarms,
        due=snapshot.due_now,
        due_url=changelist + filtered(lifecycle="pending", due_at__lte=now),
        not_handled_url=changelist
        + filtered(lifecycle="awaiting_handling", delivered_at__lt=alarms.handling_deadline),
        stuck_in_flight=rows.stuck_in_flight(now)[: metrics.COUNT_CAP].count()
        if model.at_most_once
        else 0,
        stuck_url=changelist
        + filtered(lifecycle="in_flight", effect_started_at__lt=alarms.handling_deadline),
    )


def filtered(**lookups: str | datetime) -> str:
    """A changelist's query string; times in ISO 8601, which its lookups parse."""
    values = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in lookups.items()}
    return "?" + urlencode(values)


def failed_row(row: ScheduledEvent, site: admin.AdminSite) -> FailedRow:
    opts = row._meta
    url = reverse(
        f"admin:{opts.app_label}_{opts.model_name}_change",
        args=(quote(row.pk),),
        current_app=site.name,
    )
    return FailedRow(
        event_id=row.event_id,
        url=url,
        due_at=row.due_at,
        attempts=row.attempts,
        last_error=Truncator(row.last_error).chars(ERROR_CHARS),
    )
