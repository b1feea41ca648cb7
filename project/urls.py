from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from scheduling.views import bad_request_naming_the_body, healthz

handler400 = bad_request_naming_the_body

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/", include("scheduling.api.urls")),
    path("api/", include("purchases.urls")),
    path("api/", include("trainings.urls")),
]
