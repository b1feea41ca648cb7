"""The framework's admin on any AdminSite: the default admins, "needs attention", the
dashboard, and those two pages in the index's "Scheduling" app.

On django.contrib.admin.site, SchedulingConfig.ready() adds each (SCHEDULING_ADMIN_* turn them
off). A host's own site either subclasses SchedulingAdminSiteMixin (the pages are in its
get_urls, the box on its index) and calls `register(site)` for the admins, or calls
`register(site)` alone, which also adds the pages by wrapping that site's get_urls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import URLPattern, URLResolver

from scheduling.ops.admin.dashboard import INDEX_TEMPLATE, add_dashboard_url, dashboard_urls
from scheduling.ops.admin.defaults import register_scheduled_models
from scheduling.ops.admin.index import with_pages
from scheduling.ops.admin.views import add_attention_url, attention_urls
from scheduling.rows.conf import SchedulingSettings
from scheduling.rows.models import ScheduledEvent

if TYPE_CHECKING:
    SiteBase = admin.AdminSite
else:
    SiteBase = object


class SchedulingAdminSiteMixin(SiteBase):
    """`class OpsSite(SchedulingAdminSiteMixin, admin.AdminSite)`: the framework's pages among
    the site's URLs and in the "Scheduling" app of its index."""

    index_template: str | None = INDEX_TEMPLATE

    def get_urls(self) -> list[URLPattern | URLResolver]:
        return [*scheduling_urls(self), *super().get_urls()]

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        app_list = with_pages(self.get_app_list(request), self.name)
        return super().index(request, extra_context={"app_list": app_list, **(extra_context or {})})


class SchedulingAdminSite(SchedulingAdminSiteMixin, admin.AdminSite):
    """An AdminSite with the framework's pages, e.g. for AdminConfig.default_site."""


def scheduling_urls(site: admin.AdminSite) -> list[URLPattern | URLResolver]:
    """The attention page and the dashboard on `site`; first, before its catch-all patterns."""
    return [*attention_urls(site), *dashboard_urls(site)]


def register(site: admin.AdminSite) -> list[type[ScheduledEvent]]:
    """A default admin on `site` for every scheduled model it has not registered (returns
    those), and the framework's pages on it; calling it twice adds nothing."""
    added = register_scheduled_models(site)
    add_pages(site)
    return added


def add_pages(site: admin.AdminSite, *, index_template: bool = True) -> None:
    if isinstance(site, SchedulingAdminSiteMixin):
        return  # its get_urls lists them
    add_attention_url(site)
    add_dashboard_url(site, index_template=index_template)


def install_on_default_site(conf: SchedulingSettings, site: admin.AdminSite | None = None) -> None:
    """From SchedulingConfig.ready() on django.contrib.admin.site, each part as the
    SCHEDULING_ADMIN_* settings allow."""
    site = site or admin.site
    if conf.admin_autoregister:
        register_scheduled_models(site)
    if conf.admin_pages:
        add_pages(site, index_template=conf.admin_index_template)
