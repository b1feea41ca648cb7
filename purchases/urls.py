from django.urls import path
from rest_framework.routers import SimpleRouter

from purchases.api import views

app_name = "purchases"

router = SimpleRouter()
router.register("accounts", views.AccountViewSet)
router.register("artists", views.ArtistViewSet)
router.register("releases", views.ReleaseViewSet)
router.register("customers", views.CustomerViewSet)
router.register("purchases", views.PurchaseViewSet)
router.register("scheduled-purchases", views.ScheduledPurchaseViewSet)

urlpatterns = [
    *router.urls,
    path("downloads/<str:token>/", views.DownloadView.as_view(), name="download"),
]
