"""The admin index's "Scheduling" app lists the framework's pages (the dashboard, needs
attention) above the app's own models: one "Scheduling" box, not two."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, reverse

PAGES = (("Dashboard", "scheduling_dashboard"), ("Needs attention", "scheduling_attention"))
ALL_PERMS = ("add", "change", "delete", "view")


def page_rows(site_name: str) -> list[dict[str, Any]]:
    """An app-list row for each of the framework's pages that this site has."""
    rows = []
    for name, url_name in PAGES:
        try:
            url = reverse(f"admin:{url_name}", current_app=site_name)
        except NoReverseMatch:
            continue
        perms = {perm: perm == "view" for perm in ALL_PERMS}
        rows.append(
            {"name": name, "object_name": url_name, "admin_url": url, "add_url": None}
            | {"view_only": True, "perms": perms}
        )
    return rows


def with_pages(app_list: list[dict[str, Any]], site_name: str) -> list[dict[str, Any]]:
    """The app list with the pages first in the "Scheduling" app (added if the user sees none
    of its models)."""
    rows = page_rows(site_name)
    if not rows:
        return app_list
    apps = [dict(app) for app in app_list]
    entry = next((app for app in apps if app["app_label"] == "scheduling"), None)
    if entry is None:
        entry = {"name": "Scheduling", "app_label": "scheduling", "models": []}
        entry |= {"app_url": rows[0]["admin_url"], "has_module_perms": True}
        apps = sorted([*apps, entry], key=lambda app: str(app["name"]).lower())
    entry["models"] = [*rows, *entry["models"]]
    return apps


def index_with_pages(
    site: admin.AdminSite, index: Callable[..., HttpResponse]
) -> Callable[..., HttpResponse]:
    """`site.index`, its app list with the framework's pages in the "Scheduling" app."""

    def view(request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        app_list = with_pages(site.get_app_list(request), site.name)
        return index(request, extra_context={"app_list": app_list, **(extra_context or {})})

    return view
