"""The operators' dashboard: per scheduled model, what is waiting and what flowed, with charts.

`dashboard_urls(site)` are the page at `<admin>/scheduling/dashboard/` (URL name
`admin:scheduling_dashboard`) and its figures as JSON at `<admin>/scheduling/dashboard/data/`
(`admin:scheduling_dashboard_data`, which the page fetches every REFRESH_SECONDS), both behind
the site's admin_view, and the pause and resume view (scheduling.ops.admin.pauses); `add_dashboard_url(site)` adds them to a site by wrapping its get_urls,
as the "needs attention" page does, and lists both pages first in the "Scheduling" app of the
site's index (scheduling.ops.admin.index); a host's own `admin/index.html` still applies.

The charts are Chart.js, from the django-admincharts package (a dependency): through
staticfiles when the host lists "admincharts" in INSTALLED_APPS, else served by the dashboard
itself from the installed package. Nothing loads from another host.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from importlib import resources
from typing import Any

from django.apps import apps
from django.contrib import admin
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.templatetags.static import static
from django.urls import URLPattern, URLResolver, path, reverse
from django.utils import timezone
from django.utils.text import capfirst

from scheduling.delivery import metrics
from scheduling.delivery.metrics.gauges import ModelSnapshot
from scheduling.delivery.pauses.services import pauses
from scheduling.ops import health
from scheduling.ops.admin.alarms import Backlog, expected_backlog, model_alarms
from scheduling.ops.admin.index import index_with_pages
from scheduling.ops.admin.pauses import pause_context, pause_urls
from scheduling.ops.admin.views import prepend_urls
from scheduling.rows.databases import redis_client_for_locks
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.registry import scheduled_models

REFRESH_SECONDS = 10
HOUR = 60  # minutes
DAY = 24 * 60
DAY_BUCKET = 15  # minutes per point of the last day's charts
CHARTS_APP = "admincharts"  # the django-admincharts package: Chart.js (MIT) in its static files
CHART_FILE = "admincharts/chart.min.js"
INDEX_TEMPLATE = "admin/scheduling/index.html"  # the index whose "Scheduling" app lists the pages


def add_dashboard_url(site: admin.AdminSite | None = None, *, index_template: bool = True) -> None:
    """Add the dashboard to `site` (default: django.contrib.admin.site); twice does nothing.
    With `index_template`, the site's index lists both pages in its "Scheduling" app (unless
    the host set its own index template)."""
    site = site or admin.site
    added = prepend_urls(site, "scheduling_dashboard_added", lambda: dashboard_urls(site))
    if added and index_template and site.index_template is None:
        site.index_template = INDEX_TEMPLATE
        site.index = index_with_pages(site, site.index)  # type: ignore[method-assign,assignment]


def dashboard_urls(site: admin.AdminSite) -> list[URLPattern | URLResolver]:
    def page(request: HttpRequest) -> HttpResponse:
        return dashboard_view(request, site)

    def data(request: HttpRequest) -> HttpResponse:
        return dashboard_data_view(request, site)

    return [
        path("scheduling/dashboard/", site.admin_view(page), name="scheduling_dashboard"),
        path("scheduling/dashboard/data/", site.admin_view(data), name="scheduling_dashboard_data"),
        path(
            "scheduling/dashboard/chart.js",
            site.admin_view(chart_script_view, cacheable=True),
            name="scheduling_dashboard_chart",
        ),
        *pause_urls(site),
    ]


def dashboard_view(request: HttpRequest, site: admin.AdminSite) -> HttpResponse:
    """Staff only (the site's admin_view); each model only for users who may view it."""
    request.current_app = site.name
    context = {
        **site.each_context(request),
        "title": "Scheduling dashboard",
        "dashboard": dashboard_payload(request, site),
        "data_url": reverse("admin:scheduling_dashboard_data", current_app=site.name),
        "day_bucket": DAY_BUCKET,
        "chart_script": chart_script_url(site),
    }
    return TemplateResponse(request, "admin/scheduling/dashboard.html", context)


def dashboard_data_view(request: HttpRequest, site: admin.AdminSite) -> HttpResponse:
    return JsonResponse(dashboard_payload(request, site))


def dashboard_payload(
    request: HttpRequest, site: admin.AdminSite, *, now: datetime | None = None
) -> dict[str, Any]:
    now = now or timezone.now()
    shown = [
        model
        for model in scheduled_models()
        if site.is_registered(model) and site.get_model_admin(model).has_view_permission(request)
    ]
    ages = sweep_ages(shown, now)
    paused = pauses()
    models = [
        model_figures(model, site, now, age, paused=model._meta.label_lower in paused)
        for model, age in zip(shown, ages, strict=True)
    ]
    for figures in models:
        pause = paused.get(figures["model"])
        figures["pause"] = pause_context(request, figures["model"], pause, site.name)
    models.sort(key=busiest_first)
    return {
        "generated_at": now.isoformat(),
        "refresh_seconds": REFRESH_SECONDS,
        "in_alarm": sum(1 for figures in models if figures["alarms"]),
        "counters_missing": counters_missing(),
        "models": models,
    }


def counters_missing() -> str:
    """Why the counted figures (last hour, last day, the charts) read 0, or "" when they are
    kept: processes add to them in the default cache's Redis, which the embedded mode lacks."""
    if redis_client_for_locks() is not None:
        return ""
    return (
        "No counters in this mode: the published, handled and failed figures and the charts "
        "are counted in Redis (the default cache), and this site's cache is not Redis (the "
        "embedded mode). They read 0 here; the Now and Rows columns come from the database and "
        "are current."
    )


def model_figures(
    model: type[ScheduledEvent],
    site: admin.AdminSite,
    now: datetime,
    sweep_age: float | None,
    *,
    paused: bool = False,
) -> dict:
    """`sweep_age`: seconds since the model's last sweep (None: unknown, or never)."""
    opts = model._meta
    snapshot = metrics.snapshot(model)
    day = metrics.recent_minutes(opts.label_lower, DAY, now=now)
    hour = day[-HOUR:]
    changelist = reverse(
        f"admin:{opts.app_label}_{opts.model_name}_changelist", current_app=site.name
    )
    awaits = model.get_awaits_handling()
    backlog = expected_backlog(model, metrics.due_rows(model, snapshot.due_now), hour, now)
    return {
        "model": opts.label_lower,
        "label": f"{capfirst(opts.verbose_name_plural)} ({opts.app_config.verbose_name})",
        "pending": snapshot.pending,
        "due_now": snapshot.due_now,
        "oldest_due_seconds": snapshot.oldest_due_seconds if snapshot.due_now else None,
        "failed_rows": snapshot.failed_rows,
        # None: the model's events end at publishing, nothing awaits a handler.
        "awaiting_handling": snapshot.awaiting_handling if awaits else None,
        **alarm_figures(model, snapshot, now, sweep_age, paused=paused),
        "backlog": backlog_figures(backlog),
        "last_hour": totals(hour),
        "last_day": totals(day),
        "minutes": series(hour),
        "day": series([merged(day[i : i + DAY_BUCKET]) for i in range(0, len(day), DAY_BUCKET)]),
        "links": {
            "changelist": changelist,
            "failed": f"{changelist}?lifecycle=failed",
            "awaiting_handling": f"{changelist}?lifecycle=awaiting_handling",
        },
    }


def alarm_figures(
    model: type[ScheduledEvent],
    snapshot: ModelSnapshot,
    now: datetime,
    sweep_age: float | None,
    *,
    paused: bool,
) -> dict[str, Any]:
    """A paused model's rows wait on purpose: neither late nor unswept (its pause box says so)."""
    alarms = model_alarms(model.objects.all(), snapshot, now, paused=paused)
    unswept = not paused and sweep_age is not None and sweep_age > health.max_sweep_age()
    return {
        "late": alarms.late_seconds is not None,
        "not_handled_in_time": alarms.not_handled,
        "seconds_since_last_sweep": None if sweep_age is None else round(sweep_age, 1),
        "not_swept": unswept,
        "alarms": alarms.labels + ([sweep_alarm(sweep_age)] if unswept else []),
    }


def sweep_alarm(seconds: float | None) -> str:
    return f"Not swept: {health.no_sweep_text(seconds or 0.0)}"


def sweep_ages(models: Sequence[type[ScheduledEvent]], now: datetime) -> list[float | None]:
    """Seconds since each model's last sweep; None each where the store cannot tell."""
    ages = metrics.last_sweep_ages([m._meta.label_lower for m in models], now=now.timestamp())
    return ages or [None] * len(models)


def backlog_figures(backlog: Backlog) -> dict[str, Any]:
    return {
        "rows": backlog.rows,
        "pace_per_second": round(backlog.pace, 3),
        "done_at": backlog.done_at.isoformat() if backlog.done_at else None,
        "text": backlog.text,
    }


def busiest_first(figures: dict[str, Any]) -> tuple[int, int, str]:
    """Models in alarm first, then those with something to look at (traffic, a backlog,
    failures), then by name."""
    activity = figures["last_day"]["published"] + figures["pending"] + figures["failed_rows"]
    return (0 if figures["alarms"] else 1, 0 if activity else 1, figures["label"])


def totals(buckets: Sequence[metrics.MinuteBucket]) -> dict[str, int]:
    return {
        "published": sum(b.published for b in buckets),
        "handled": sum(b.handled for b in buckets),
        "handle_failures": sum(b.handle_failures for b in buckets),
    }


def merged(buckets: Sequence[metrics.MinuteBucket]) -> metrics.MinuteBucket:
    """Several minutes as one point. Percentiles do not add up: p50 becomes the mean of the
    minutes' medians weighted by what each published, p99 the worst minute's (an upper bound)."""
    counts = totals(buckets)
    medians = [(b.lateness_p50, b.published or 1) for b in buckets if b.lateness_p50 is not None]
    weight = sum(w for _, w in medians)
    p99s = [b.lateness_p99 for b in buckets if b.lateness_p99 is not None]
    return metrics.MinuteBucket(
        minute=buckets[0].minute,
        published=counts["published"],
        handled=counts["handled"],
        handle_failures=counts["handle_failures"],
        lateness_p50=sum(v * w for v, w in medians) / weight if medians else None,
        lateness_p99=max(p99s) if p99s else None,
    )


def series(buckets: Sequence[metrics.MinuteBucket]) -> dict[str, list[Any]]:
    """Columns for the charts: one list per line, aligned on `t` (ISO 8601 UTC)."""

    def rounded(value: float | None) -> float | None:
        return None if value is None else round(value, 3)

    return {
        "t": [b.minute.isoformat() for b in buckets],
        "published": [b.published for b in buckets],
        "handled": [b.handled for b in buckets],
        "handle_failures": [b.handle_failures for b in buckets],
        "lateness_p50": [rounded(b.lateness_p50) for b in buckets],
        "lateness_p99": [rounded(b.lateness_p99) for b in buckets],
    }


def chart_script_url(site: admin.AdminSite) -> str:
    """Chart.js through staticfiles when the host installed the app, else the dashboard's own
    copy of the same file: a host needs no setting for the charts."""
    if apps.is_installed(CHARTS_APP):
        return static(CHART_FILE)
    return reverse("admin:scheduling_dashboard_chart", current_app=site.name)


def chart_script_view(request: HttpRequest) -> HttpResponse:
    script = resources.files(CHARTS_APP).joinpath("static", CHART_FILE).read_bytes()
    response = HttpResponse(script, content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "private, max-age=86400"
    return response
