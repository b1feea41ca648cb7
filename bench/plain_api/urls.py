from rest_framework.routers import SimpleRouter

from bench.plain_api.views import PlainPurchaseViewSet

router = SimpleRouter()
router.register("plain-purchases", PlainPurchaseViewSet)
urlpatterns = router.urls
