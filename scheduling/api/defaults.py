"""What every framework view carries itself, so that a host's REST_FRAMEWORK may be empty:
its own parsers (depth-limited JSON), bounded pagination, filter backend and renderers, and the
authenticated user as the actor of the changes it makes. Authentication stays the host's
(REST_FRAMEWORK's, or DRF's session and basic defaults)."""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django_filters.rest_framework import DjangoFilterBackend  # type: ignore[import-untyped]
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from scheduling.actors import actor, user_actor
from scheduling.api.pagination import BoundedLimitOffsetPagination
from scheduling.api.parsers import JSONParser

if TYPE_CHECKING:
    ViewBase = APIView
else:
    ViewBase = object


def renderers() -> list[Any]:
    """The host's renderers; the browsable one only where its templates are installed."""
    browsable = apps.is_installed("rest_framework")
    return [
        renderer
        for renderer in api_settings.DEFAULT_RENDERER_CLASSES
        if browsable
        or not (isinstance(renderer, type) and issubclass(renderer, BrowsableAPIRenderer))
    ]


# Rows a request changes are recorded as changed by its user: `api:alice`, or `api:alice (token)`
# when a token (request.auth) authenticated it. DRF authenticates in initial(); the actor is set
# there and reset when dispatch() ends, however it ends: an exception the view does not handle
# must not leave it to the thread's next request. (A comment: the OpenAPI schema would show a
# docstring here as every inheriting view's description.)
class RequestActor(ViewBase):
    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if request.user is not None and request.user.is_authenticated:
            name = user_actor("api", request.user, token=request.auth is not None)
            self.actor_scope.enter_context(actor(name))

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        self.actor_scope = ExitStack()
        with self.actor_scope:
            return super().dispatch(request, *args, **kwargs)


class FrameworkViewDefaults(RequestActor):
    parser_classes: Any = [JSONParser, FormParser, MultiPartParser]
    pagination_class: Any = BoundedLimitOffsetPagination
    filter_backends: Any = [DjangoFilterBackend]
    renderer_classes: Any = renderers()
