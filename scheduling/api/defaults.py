"""What every framework view carries itself, so that a host's REST_FRAMEWORK may be empty:
its own parsers (depth-limited JSON), bounded pagination, filter backend and renderers.
Authentication stays the host's (REST_FRAMEWORK's, or DRF's session and basic defaults)."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django_filters.rest_framework import DjangoFilterBackend  # type: ignore[import-untyped]
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.settings import api_settings

from scheduling.api.pagination import BoundedLimitOffsetPagination
from scheduling.api.parsers import JSONParser


def renderers() -> list[Any]:
    """The host's renderers; the browsable one only where its templates are installed."""
    browsable = apps.is_installed("rest_framework")
    return [
        renderer
        for renderer in api_settings.DEFAULT_RENDERER_CLASSES
        if browsable
        or not (isinstance(renderer, type) and issubclass(renderer, BrowsableAPIRenderer))
    ]


class FrameworkViewDefaults:
    parser_classes: Any = [JSONParser, FormParser, MultiPartParser]
    pagination_class: Any = BoundedLimitOffsetPagination
    filter_backends: Any = [DjangoFilterBackend]
    renderer_classes: Any = renderers()
