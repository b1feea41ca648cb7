"""Public: what a host needs to give its scheduled models (and its own entities) a REST API in
the framework's manner.

    from scheduling.api import ScheduledEventSerializer, ScheduledEventViewSet, DigitIdRouter

`include("scheduling.api.urls")` mounts the framework's own routes (every scheduled model,
history, keyed jobs and recurring schedules where installed). Settings may name
"scheduling.api.JSONParser", "scheduling.api.BoundedLimitOffsetPagination" and
"scheduling.api.api_exception_handler" (REST_FRAMEWORK; a busy database answers 503):
names load lazily, as DRF's settings import their classes while DRF itself loads. Every name here
is part of the documented surface; the modules behind it (`scheduling.ops.api`) are internal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduling import lazy_names

if TYPE_CHECKING:
    from scheduling.ops.api.defaults import RequestActor
    from scheduling.ops.api.filters import AwareDateTimeFilter, ScheduledEventFilterSet
    from scheduling.ops.api.pagination import BoundedLimitOffsetPagination
    from scheduling.ops.api.parsers import JSONParser
    from scheduling.ops.api.routes import DigitIdRouter
    from scheduling.ops.api.serializers import (
        IsoDurationField,
        ScheduledEventSerializer,
        StrictDateTimeField,
        column_range,
        row_id_field,
    )
    from scheduling.ops.api.views import (
        ModelChangePermission,
        ModelViewPermission,
        ScheduledEventViewSet,
        as_bad_request,
    )
    from scheduling.ops.busy import api_exception_handler

HOMES = {
    "AwareDateTimeFilter": "scheduling.ops.api.filters",
    "BoundedLimitOffsetPagination": "scheduling.ops.api.pagination",
    "DigitIdRouter": "scheduling.ops.api.routes",
    "IsoDurationField": "scheduling.ops.api.serializers",
    "JSONParser": "scheduling.ops.api.parsers",
    "ModelChangePermission": "scheduling.ops.api.views",
    "ModelViewPermission": "scheduling.ops.api.views",
    "RequestActor": "scheduling.ops.api.defaults",
    "ScheduledEventFilterSet": "scheduling.ops.api.filters",
    "ScheduledEventSerializer": "scheduling.ops.api.serializers",
    "ScheduledEventViewSet": "scheduling.ops.api.views",
    "StrictDateTimeField": "scheduling.ops.api.serializers",
    "api_exception_handler": "scheduling.ops.busy",
    "as_bad_request": "scheduling.ops.api.views",
    "column_range": "scheduling.ops.api.serializers",
    "row_id_field": "scheduling.ops.api.serializers",
}
__all__ = [
    "AwareDateTimeFilter",
    "BoundedLimitOffsetPagination",
    "DigitIdRouter",
    "IsoDurationField",
    "JSONParser",
    "ModelChangePermission",
    "ModelViewPermission",
    "RequestActor",
    "ScheduledEventFilterSet",
    "ScheduledEventSerializer",
    "ScheduledEventViewSet",
    "StrictDateTimeField",
    "api_exception_handler",
    "as_bad_request",
    "column_range",
    "row_id_field",
]


__getattr__, __dir__ = lazy_names(__name__, HOMES, globals())
