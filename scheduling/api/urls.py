from rest_framework.routers import DefaultRouter

from scheduling.api.jobs import JobViewSet

router = DefaultRouter()
router.register("jobs", JobViewSet, basename="job")

urlpatterns = router.urls
