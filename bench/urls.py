"""The project's URLs plus `/bench/plain-purchases/`, served only under bench.settings."""

from django.urls import include, path

from project.urls import urlpatterns as project_urlpatterns

urlpatterns = [
    *project_urlpatterns,
    path("bench/", include("bench.plain_api.urls")),
]
