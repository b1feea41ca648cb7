"""The read-only list of a domain's scheduled rows, with bulk reschedule, cancel and retry over a
filter, and each row's history.

A domain subclasses ScheduledEventViewSet, sets queryset, serializer_class and
filterset_class, and registers it on its router. The bulk actions run the body's `filter`
through that same FilterSet, then make ONE QuerySet call, so any filter the list offers
(joins included) selects rows for a bulk change. BulkActions is the reschedule and cancel
pair alone, for a viewset that selects and changes its rows its own way (the jobs API).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from django.http import QueryDict
from django_filters.constants import EMPTY_VALUES  # type: ignore[import-untyped]
from django_filters.rest_framework import DjangoFilterBackend  # type: ignore[import-untyped]
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from scheduling.ops.api.defaults import FrameworkViewDefaults
from scheduling.ops.api.filters import ScheduledEventFilterSet
from scheduling.ops.api.pagination import HISTORY_PAGE_SIZE, MAX_LIMIT, HistoryPagination
from scheduling.ops.api.serializers import (
    BulkCancelSerializer,
    BulkCountSerializer,
    BulkRescheduleSerializer,
    BulkRetrySerializer,
    HistoryEntrySerializer,
)
from scheduling.ops.api.throttles import BulkRateThrottle
from scheduling.rows.history.timeline import timeline_count, timeline_page
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.querysets import LateRetryError


class ModelViewPermission(permissions.DjangoModelPermissions):
    """DjangoModelPermissions that also requires the view permission to read."""

    perms_map = {
        **permissions.DjangoModelPermissions.perms_map,
        "GET": ["%(app_label)s.view_%(model_name)s"],
        "HEAD": ["%(app_label)s.view_%(model_name)s"],
        "OPTIONS": ["%(app_label)s.view_%(model_name)s"],
    }


class ModelChangePermission(permissions.DjangoModelPermissions):
    """Every method needs the model's change permission: for actions that change rows."""

    perms_map = {
        method: ["%(app_label)s.change_%(model_name)s"]
        for method in ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")
    }


BAD_REQUEST = OpenApiResponse(description="Invalid body or filter; the message names the field.")
NOT_FOUND = OpenApiResponse(description="No row has this id.")


@contextmanager
def as_bad_request() -> Iterator[None]:
    """A model's or service's ValidationError (which names the field) becomes a 400."""
    try:
        yield
    except DjangoValidationError as exc:
        detail = exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        raise serializers.ValidationError(detail) from None


def validated(serializer_class: type[serializers.Serializer], request: Request) -> Any:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


# The bulk reschedule and cancel actions: the body checked by the viewset's serializer, the rows
# it selects changed by the viewset's bulk_reschedule and bulk_cancel, their count answered. (A
# comment: the OpenAPI schema would show a docstring here as every inheriting view's description.)
class BulkActions:
    bulk_reschedule_serializer: ClassVar[type[BulkRescheduleSerializer]] = BulkRescheduleSerializer
    bulk_cancel_serializer: ClassVar[type[BulkCancelSerializer]] = BulkCancelSerializer

    @extend_schema(
        request=BulkRescheduleSerializer,
        responses={200: BulkCountSerializer, 400: BAD_REQUEST},
        summary="Reschedule the pending rows a filter selects",
        description="Send `due_at` (move them to a time) or `shift` (move them by a duration). "
        "Only pending rows move; each moved row's version goes up by one.",
    )
    @action(
        detail=False,
        methods=["post"],
        permission_classes=[ModelChangePermission],
        throttle_classes=[BulkRateThrottle],
    )
    def reschedule(self, request: Request) -> Response:
        body = validated(self.bulk_reschedule_serializer, request)
        return Response({"count": self.bulk_reschedule(body)})

    @extend_schema(
        request=BulkCancelSerializer,
        responses={200: BulkCountSerializer, 400: BAD_REQUEST},
        summary="Cancel the pending rows a filter selects",
    )
    @action(
        detail=False,
        methods=["post"],
        permission_classes=[ModelChangePermission],
        throttle_classes=[BulkRateThrottle],
    )
    def cancel(self, request: Request) -> Response:
        body = validated(self.bulk_cancel_serializer, request)
        return Response({"count": self.bulk_cancel(body)})

    def bulk_reschedule(self, body: dict[str, Any]) -> int:
        """Move the pending rows the body selects to `due_at` or by `shift`; how many moved."""
        raise NotImplementedError

    def bulk_cancel(self, body: dict[str, Any]) -> int:
        """Cancel the pending rows the body selects, with its `reason`; how many."""
        raise NotImplementedError


class ScheduledEventViewSet(BulkActions, FrameworkViewDefaults, viewsets.ReadOnlyModelViewSet):
    filterset_class: ClassVar[type[ScheduledEventFilterSet]] = ScheduledEventFilterSet
    permission_classes = [ModelViewPermission]

    @extend_schema(
        request=BulkRetrySerializer,
        responses={200: BulkCountSerializer, 400: BAD_REQUEST},
        summary="Retry the failed and expired rows a filter selects",
        description="They become pending and due now, with their attempts reset and their "
        "version up by one (a message of an earlier try still queued is then ignored). Other "
        'rows do not change; `{"filter": {"lifecycle": "failed"}}` selects the failed ones. '
        "Rows past the model's max_lateness need `allow_late: true`; without it the answer is "
        "400, naming the lateness, and no row changes.",
    )
    @action(
        detail=False,
        methods=["post"],
        permission_classes=[ModelChangePermission],
        throttle_classes=[BulkRateThrottle],
    )
    def retry(self, request: Request) -> Response:
        body = validated(BulkRetrySerializer, request)
        try:
            count = self.bulk_selection(body).retry(allow_late=body["allow_late"])
        except LateRetryError as exc:
            raise serializers.ValidationError({"allow_late": [str(exc)]}) from None
        return Response({"count": count})

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        refuse_unknown(request.query_params, self.accepted_query_parameters(), field=None)
        return super().list(request, *args, **kwargs)

    def accepted_query_parameters(self) -> Sequence[str]:
        """The list's filters, and what its pagination, other filter backends (a subclass's
        ordering or search) and format suffix read."""
        names: list[str] = []
        for backend in (backend_class() for backend_class in self.filter_backends):
            if isinstance(backend, DjangoFilterBackend):
                filterset = backend.get_filterset_class(self, self.get_queryset())
                names += filterset.base_filters if filterset else []
            else:
                names += [p["name"] for p in backend.get_schema_operation_parameters(self)]
        if self.paginator is not None:
            names += [p["name"] for p in self.paginator.get_schema_operation_parameters(self)]
        return [*names, api_settings.URL_FORMAT_OVERRIDE]

    @extend_schema(
        request=None,
        responses={200: HistoryEntrySerializer(many=True), 404: NOT_FOUND},
        summary="The row's timeline, oldest first, a page at a time",
        description="Every transition of the row: scheduled, moves, cancels, each delivery "
        "attempt and its outcome, retries and expiry, with who made it (`actor`). "
        f"{HISTORY_PAGE_SIZE} entries a page (`limit` up to {MAX_LIMIT}); `next` links the "
        "page after.",
    )
    @action(detail=True, methods=["get"], pagination_class=HistoryPagination, filter_backends=[])
    def history(self, request: Request, pk: str | None = None) -> Response:
        row = self.get_object()
        paginator = HistoryPagination()
        offset, limit = paginator.page_bounds(request, timeline_count(row))
        page = timeline_page(row, offset=offset, limit=limit)
        return paginator.get_paginated_response([entry.as_dict() for entry in page])

    def bulk_reschedule(self, body: dict[str, Any]) -> int:
        rows = self.bulk_selection(body)
        if "due_at" in body:
            return rows.reschedule(body["due_at"])
        try:
            return rows.shift(body["shift"])
        except ValueError as exc:  # the shift would carry rows out of the storable range
            raise serializers.ValidationError({"shift": [str(exc)]}) from None

    def bulk_cancel(self, body: dict[str, Any]) -> int:
        return self.bulk_selection(body).cancel(body["reason"])

    def bulk_selection(self, body: dict[str, Any]) -> Any:
        """The rows the body's filter selects, refusing unknown, invalid or empty filters."""
        filterset = self.filterset_class(
            data=filter_querydict(body["filter"]),
            queryset=self.bulk_queryset(),
            request=self.request,
        )
        refuse_unknown(body["filter"], filterset.filters, field="filter")
        if not filterset.is_valid():
            raise serializers.ValidationError({"filter": filterset.errors})
        # A filter of only empty values would make django-filter select every row.
        if not body["all"] and all(v in EMPTY_VALUES for v in filterset.form.cleaned_data.values()):
            raise serializers.ValidationError(
                {"filter": 'The filter selects every row; send "all": true to mean that.'}
            )
        return filterset.qs

    def bulk_queryset(self) -> QuerySet[ScheduledEvent]:
        # Bulk updates need a plain selection: no select_related joins, no ordering.
        return self.get_queryset().select_related(None).prefetch_related(None).order_by()


def refuse_unknown(given: Iterable[str], accepted: Iterable[str], *, field: str | None) -> None:
    """A 400 naming the unknown filters and the accepted ones: under `field` (a bulk body's
    "filter"), else under each unknown query parameter."""
    accepted = [name for name in accepted if name]
    unknown = sorted(set(given) - set(accepted))
    if not unknown:
        return
    message = f"Unknown filter {', '.join(unknown)}; accepted: {', '.join(accepted)}."
    raise serializers.ValidationError(
        {field: message} if field else {name: [message] for name in unknown}
    )


def filter_querydict(selection: dict[str, Any]) -> QueryDict:
    data = QueryDict(mutable=True)
    for name, value in selection.items():
        data.setlist(name, [str(item) for item in (value if isinstance(value, list) else [value])])
    return data
