from rest_framework.routers import DefaultRouter

from scheduling.jobs.api import JobViewSet
from scheduling.recurring.api import ScheduleViewSet

router = DefaultRouter()
router.register("jobs", JobViewSet, basename="job")
router.register("schedules", ScheduleViewSet, basename="schedule")

urlpatterns = router.urls
