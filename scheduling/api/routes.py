"""Where a scheduled model's rows are served: the generic route of each model, and the URL of a
row's history (`events/<app_label>/<model_name>/<pk>/history/`)."""

from __future__ import annotations

from typing import Any

from django.urls import NoReverseMatch
from rest_framework.request import Request
from rest_framework.reverse import reverse

from scheduling.models import ScheduledEvent


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
