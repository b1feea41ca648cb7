"""Public: the framework's REST routes, for
`path("api/scheduling/", include("scheduling.api.urls"))`; `router` is there for a host that
mounts the routes itself. Both are read from the routes' module when asked for, so routes
registered with `extensions.add_route` before the URLconf loads are in them."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduling.ops.api.urls import router, urlpatterns

__all__ = ["router", "urlpatterns"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'scheduling.api.urls' has no attribute {name!r}")
    return getattr(importlib.import_module("scheduling.ops.api.urls"), name)
