"""What every framework view carries itself, so that a host's REST_FRAMEWORK may be empty:
its own parsers (depth-limited JSON), bounded pagination, filter backend and renderers, the
authenticated user as the actor of the changes it makes, and a write's answer (the row) only
for a user who may view it. Authentication stays the host's (REST_FRAMEWORK's, or DRF's session
and basic defaults)."""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django_filters.rest_framework import DjangoFilterBackend  # type: ignore[import-untyped]
from rest_framework import status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from scheduling.ops.api.pagination import BoundedLimitOffsetPagination
from scheduling.ops.api.parsers import JSONParser
from scheduling.rows.actors import actor, user_actor

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


# The actions of a model resource whose answer is the row itself.
ROW_WRITES = frozenset({"create", "update", "partial_update", "destroy"})


# A write's answer is the row: what a GET would show. A user who may change rows but not view
# them (no view permission) gets 204 No Content instead, the write done, so that a PATCH of
# nothing cannot read a row. Custom actions (bulk counts, a trigger's id) answer as they are.
# (A comment: the OpenAPI schema would show a docstring here as every inheriting view's
# description.)
class RowAnswersNeedViewPermission(ViewBase):
    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        if self.hides_row(request, response):
            location = response.get("Location")
            response = Response(status=status.HTTP_204_NO_CONTENT)
            if location:
                response["Location"] = location
        return super().finalize_response(request, response, *args, **kwargs)

    def hides_row(self, request: Request, response: Any) -> bool:
        if getattr(self, "action", None) not in ROW_WRITES:
            return False
        if not isinstance(response, Response) or not status.is_success(response.status_code):
            return False
        model = self.get_queryset().model  # type: ignore[attr-defined]
        opts = model._meta
        return not request.user.has_perm(f"{opts.app_label}.view_{opts.model_name}")


# Rows a request changes are recorded as changed by its user: `api:alice`, or `api:alice (token)`
# when a token (request.auth) authenticated it. DRF authenticates in initial(); the actor is set
# there and reset when dispatch() ends, however it ends: an exception the view does not handle
# must not leave it to the thread's next request. (A comment: the OpenAPI schema would show a
# docstring here as every inheriting view's description.)
class RequestActor(RowAnswersNeedViewPermission):
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
