from django.urls import path

from purchases.api import views
from scheduling.api import DigitIdRouter

app_name = "purchases"

router = DigitIdRouter()
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
