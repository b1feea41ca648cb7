"""`path("api/scheduling/", include("scheduling.api.urls"))`: every scheduled model's list and
bulk actions at `events/<app_label>/<model_name>/`, and the optional apps' endpoints, for those
of them the host installed."""

from django.apps import apps
from rest_framework.routers import DefaultRouter

from scheduling.api.generic import route_for, viewset_for
from scheduling.registry import scheduled_models

router = DefaultRouter()
for model in scheduled_models():
    router.register(route_for(model), viewset_for(model), basename=route_for(model))
if apps.is_installed("scheduling.jobs"):
    from scheduling.jobs.api import JobViewSet

    router.register("jobs", JobViewSet, basename="job")
if apps.is_installed("scheduling.recurring"):
    from scheduling.recurring.api import ScheduleViewSet

    router.register("schedules", ScheduleViewSet, basename="schedule")

urlpatterns = router.urls
