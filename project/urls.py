from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from project.api_views import ApiRootView, DocsView, RedocView, TokenView
from scheduling.views import bad_request_naming_the_body, healthz, metrics_view

handler400 = bad_request_naming_the_body

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", DocsView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", RedocView.as_view(url_name="schema"), name="api-redoc"),
    path("api/auth/token/", TokenView.as_view(), name="api-token"),
    path("api/", ApiRootView.as_view(), name="api-root"),  # before the framework's own index
    path("api/", include("scheduling.api.urls")),
    path("api/", include("purchases.urls")),
    path("api/", include("trainings.urls")),
]
