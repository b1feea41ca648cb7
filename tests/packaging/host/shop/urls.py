from rest_framework.routers import DefaultRouter

from .api import ScheduledOrderEmailViewSet

router = DefaultRouter()
router.register("scheduled-order-emails", ScheduledOrderEmailViewSet)

urlpatterns = router.urls
