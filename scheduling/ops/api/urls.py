"""`path("api/scheduling/", include("scheduling.ops.api.urls"))`: every scheduled model's list and
bulk actions at `events/<app_label>/<model_name>/`, the calendars at `calendars/`, the delivery
pauses at `pauses/`, and the routes installed apps registered
with `scheduling.rows.extensions` (the optional apps' `jobs/` and `schedules/`)."""

from typing import Any

from django.utils.module_loading import import_string

from scheduling.ops.api.calendars import CalendarViewSet
from scheduling.ops.api.generic import viewset_for
from scheduling.ops.api.pauses import PauseViewSet
from scheduling.ops.api.routes import DigitIdDefaultRouter, route_for
from scheduling.rows.extensions import Route, extensions
from scheduling.rows.registry import scheduled_models


def registered_viewset(route: Route) -> Any:
    """A route's viewset, imported now: a dotted path, or what its callable returns."""
    if isinstance(route.viewset, str):
        return import_string(route.viewset)
    return route.viewset()


def build_router() -> DigitIdDefaultRouter:
    router = DigitIdDefaultRouter()
    for model in scheduled_models():
        router.register(route_for(model), viewset_for(model), basename=route_for(model))
    router.register("calendars", CalendarViewSet, basename="calendar")
    router.register("pauses", PauseViewSet, basename="pause")
    for route in extensions.routes.values():
        router.register(route.prefix, registered_viewset(route), basename=route.basename)
    return router


router = build_router()
urlpatterns = router.urls
