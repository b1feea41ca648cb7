"""Public: the framework's REST routes, for
`path("api/scheduling/", include("scheduling.api.urls"))`; `router` is there for a host that
mounts the routes itself. Both are read from the routes' module when asked for, so routes
registered with `extensions.add_route` before the URLconf loads are in them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduling import lazy_names

if TYPE_CHECKING:
    from scheduling.ops.api.urls import router, urlpatterns

__all__ = ["router", "urlpatterns"]


__getattr__, __dir__ = lazy_names(
    __name__, dict.fromkeys(__all__, "scheduling.ops.api.urls"), globals()
)
