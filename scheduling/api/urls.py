"""`path("api/scheduling/", include("scheduling.api.urls"))`: the optional apps' endpoints,
for those of them the host installed."""

from django.apps import apps
from rest_framework.routers import DefaultRouter

router = DefaultRouter()
if apps.is_installed("scheduling.jobs"):
    from scheduling.jobs.api import JobViewSet

    router.register("jobs", JobViewSet, basename="job")
if apps.is_installed("scheduling.recurring"):
    from scheduling.recurring.api import ScheduleViewSet

    router.register("schedules", ScheduleViewSet, basename="schedule")

urlpatterns = router.urls
