from rest_framework.routers import DefaultRouter

from scheduling.api.jobs import JobViewSet
from scheduling.api.schedules import ScheduleViewSet

router = DefaultRouter()
router.register("jobs", JobViewSet, basename="job")
router.register("schedules", ScheduleViewSet, basename="schedule")

urlpatterns = router.urls
