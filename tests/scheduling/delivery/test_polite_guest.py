"""What SchedulingConfig.ready() does to the host's project, each part turned off by its
setting, and the framework's admin on a host's own AdminSite."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.test import override_settings
from django.urls import URLPattern, include, path

from scheduling.delivery.metrics import QuietIdleSweeps, logs
from scheduling.delivery.tasks import sweep_task
from scheduling.ops.admin import SchedulingAdminSiteMixin, register
from scheduling.ops.admin.sites import install_on_default_site
from scheduling.rows.conf import SchedulingSettings
from scheduling.rows.registry import scheduled_models
from tests.factories import ScheduledPingFactory
from tests.testapp.models import ScheduledPing

PAGES = {"scheduling_attention", "scheduling_dashboard", "scheduling_dashboard_data"}


def page_names(site: admin.AdminSite) -> set[str]:
    return {p.name for p in site.get_urls() if isinstance(p, URLPattern) and p.name} & PAGES


@pytest.mark.parametrize(
    ("off", "registered", "pages", "index"),
    [
        ({}, True, PAGES, "admin/scheduling/index.html"),
        ({"admin_autoregister": False}, False, PAGES, "admin/scheduling/index.html"),
        ({"admin_pages": False}, True, set(), None),
        ({"admin_index_template": False}, True, PAGES, None),
    ],
)
def test_each_admin_side_effect_has_its_setting(off, registered, pages, index):
    site = admin.AdminSite(name=f"site-{len(off)}")

    install_on_default_site(replace(SchedulingSettings(), **off), site)

    assert site.is_registered(ScheduledPing) is registered
    assert page_names(site) == pages
    assert site.index_template == index


@override_settings(
    SCHEDULING_ADMIN_AUTOREGISTER=False,
    SCHEDULING_ADMIN_PAGES=False,
    SCHEDULING_QUIET_IDLE_SWEEPS=False,
)
def test_with_every_setting_off_ready_touches_neither_the_admin_nor_celerys_loggers(monkeypatch):
    site = admin.AdminSite()
    monkeypatch.setattr(admin, "site", site)
    loggers = [logging.getLogger(name) for name in logs.CELERY_TICK_LOGGERS]
    for logger in loggers:
        monkeypatch.setattr(logger, "filters", [])

    apps.get_app_config("scheduling").ready()

    assert site._registry == {}
    assert page_names(site) == set()
    assert site.index_template is None
    assert [logger.filters for logger in loggers] == [[], []]


def test_the_workers_received_line_is_quieted_by_the_sweep_tasks_own_strategy(monkeypatch):
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(logs, "default_strategy", lambda *args, **options: seen.append(options))

    sweep_task.start_strategy(sweep_task.app, None)
    with override_settings(SCHEDULING_QUIET_IDLE_SWEEPS=False):
        sweep_task.start_strategy(sweep_task.app, None)

    assert seen == [{"info": logs.sweep_log.debug}, {}]
    strategy_filters = logging.getLogger("celery.worker.strategy").filters
    assert not any(isinstance(f, QuietIdleSweeps) for f in strategy_filters)


# A host's own admin sites: one subclasses the mixin, the other is a plain AdminSite.
class OpsSite(SchedulingAdminSiteMixin, admin.AdminSite):
    pass


ops_site = OpsSite(name="ops")
plain_site = admin.AdminSite(name="plain")
for own_site in (ops_site, plain_site):
    register(own_site)
    register(own_site)
urlpatterns = [
    path("ops/", ops_site.urls),
    path("plain/", plain_site.urls),
    path("api/", include("scheduling.ops.api.urls")),
]


@pytest.mark.urls(__name__)
@pytest.mark.parametrize("prefix", ["ops", "plain"])
def test_a_hosts_own_admin_site_gets_every_scheduled_model_and_the_pages(admin_client, prefix):
    ScheduledPingFactory()
    site = ops_site if prefix == "ops" else plain_site

    changelists = {
        model._meta.label: admin_client.get(
            f"/{prefix}/{model._meta.app_label}/{model._meta.model_name}/"
        ).status_code
        for model in scheduled_models()
    }
    dashboard = admin_client.get(f"/{prefix}/scheduling/dashboard/data/").json()
    index = admin_client.get(f"/{prefix}/").content.decode()

    assert set(changelists.values()) == {200}, changelists
    assert admin_client.get(f"/{prefix}/scheduling/dashboard/").status_code == 200
    assert admin_client.get(f"/{prefix}/scheduling/attention/").status_code == 200
    assert {m["model"] for m in dashboard["models"]} == {
        m._meta.label_lower for m in scheduled_models()
    }
    ping = next(m for m in dashboard["models"] if m["model"] == "testapp.scheduledping")
    assert ping["links"]["changelist"] == f"/{prefix}/testapp/scheduledping/"
    assert f'href="/{prefix}/scheduling/dashboard/"' in index
    assert [p.name for p in site.get_urls() if isinstance(p, URLPattern)].count(
        "scheduling_dashboard"
    ) == 1
