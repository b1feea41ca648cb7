"""Public: the framework's REST routes, for `path("api/scheduling/", include("scheduling.api.urls"))`.
`router` is there for a host that mounts the routes itself."""

from scheduling.ops.api.urls import router, urlpatterns

__all__ = ["router", "urlpatterns"]
