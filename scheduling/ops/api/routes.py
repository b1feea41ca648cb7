"""Where a scheduled model's rows are served: the generic route of each model, the URL of a
row's history (`events/<app_label>/<model_name>/<pk>/history/`), and routers whose row ids are
ASCII digits."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.urls import NoReverseMatch
from rest_framework.request import Request
from rest_framework.reverse import reverse
from rest_framework.routers import DefaultRouter, SimpleRouter

from scheduling.rows.models import ScheduledEvent


def route_for(model: type[ScheduledEvent]) -> str:
    return f"events/{model._meta.app_label}/{model._meta.model_name}"


def history_url(row: ScheduledEvent, request: Request | None, view: Any) -> str | None:
    """The generic history route of `row` (absolute with a request); failing that (a host that
    does not mount the generic API, or mounts it in a namespace), the serving view's own
    history action; None where neither is routed (a job's runs)."""
    kwargs = {"pk": row.pk}
    try:
        return reverse(f"{route_for(type(row))}-history", kwargs=kwargs, request=request)
    except NoReverseMatch:
        pass
    try:
        return view.reverse_action("history", kwargs=kwargs)
    except (AttributeError, NoReverseMatch):
        return None


class DigitIds:
    """A router mixin: a viewset whose rows have an integer id, looked up by it, and that names
    no lookup_value_regex of its own, routes only ASCII digits. DRF's default takes any text,
    and int() reads "\uff11" (a fullwidth one) as 1: one row would have many URLs."""

    def get_lookup_regex(self, viewset: Any, lookup_prefix: str = "") -> str:
        if getattr(viewset, "lookup_value_regex", None) is None and integer_ids(viewset):
            kwarg = getattr(viewset, "lookup_url_kwarg", None) or "pk"
            return f"(?P<{lookup_prefix}{kwarg}>[0-9]+)"
        return super().get_lookup_regex(viewset, lookup_prefix)  # type: ignore[misc]


def integer_ids(viewset: Any) -> bool:
    queryset = getattr(viewset, "queryset", None)
    if queryset is None or getattr(viewset, "lookup_field", "pk") not in ("pk", "id"):
        return False
    return isinstance(queryset.model._meta.pk, models.IntegerField | models.AutoField)


class DigitIdRouter(DigitIds, SimpleRouter):
    pass


class DigitIdDefaultRouter(DigitIds, DefaultRouter):
    pass
