"""The jobs' REST API: fields, serializers, filters, the OpenAPI description and the viewset
that `scheduling.ops.api.urls` mounts at `jobs/`."""

from scheduling.jobs.api.views import JobViewSet

__all__ = ["JobViewSet"]
