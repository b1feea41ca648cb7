"""`pauses/`: which models' delivery is paused, pause one (POST), resume one (DELETE
`pauses/<app_label.ModelName>/`). Staff with the `scheduling.pause_delivery` permission only."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, permissions, serializers, status, viewsets
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from scheduling.delivery.pauses.models import PERMISSION, DeliveryPause
from scheduling.delivery.pauses.services import (
    LABEL_FORM,
    USING,
    delivery_pause,
    delivery_resume,
    pausable_model,
)
from scheduling.ops.api.defaults import FrameworkViewDefaults
from scheduling.ops.api.views import BAD_REQUEST, as_bad_request, validated
from scheduling.rows.models import ScheduledEvent


class PauseDeliveryPermission(permissions.BasePermission):
    message = f"Pausing and resuming delivery takes a staff user with scheduling.{PERMISSION}."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        return bool(user and user.is_staff and user.has_perm(f"scheduling.{PERMISSION}"))


class PauseSerializer(serializers.ModelSerializer):
    class Meta:
        model = DeliveryPause
        fields = ("model", "reason", "paused_by", "paused_at")
        read_only_fields = fields


class PauseRequestSerializer(serializers.Serializer):
    model = serializers.CharField(max_length=100, help_text=f"The scheduled model, {LABEL_FORM}.")
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class ResumeRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class PauseViewSet(
    FrameworkViewDefaults,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = PauseSerializer
    permission_classes = [PauseDeliveryPermission]
    lookup_field = "model"
    lookup_value_regex = r"[^/]+"
    filter_backends: Any = []

    def get_queryset(self) -> QuerySet[DeliveryPause]:
        return DeliveryPause.objects.using(USING).order_by("model")

    def hides_row(self, request: Request, response: Any) -> bool:
        return False  # the pause permission is the permission to see pauses

    def get_object(self) -> DeliveryPause:
        model = self.named_model(self.kwargs["model"])
        pause = self.get_queryset().filter(model=model._meta.label_lower).first()
        if pause is None:
            raise NotFound(f"{model._meta.label} is not paused.")
        return pause

    @extend_schema(
        request=PauseRequestSerializer,
        responses={201: PauseSerializer, 400: BAD_REQUEST},
        summary="Pause a model's delivery",
        description="Every sweeper claims none of its rows from its next tick; due rows stay "
        "pending with their due time. Pausing a paused model keeps the first pause.",
    )
    def create(self, request: Request) -> Response:
        body = validated(PauseRequestSerializer, request)
        pause = delivery_pause(model=self.named_model(body["model"]), reason=body["reason"])
        return Response(PauseSerializer(pause).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=ResumeRequestSerializer,
        responses={204: None, 400: BAD_REQUEST, 404: OpenApiResponse(description="Not paused.")},
        summary="Resume a model's delivery",
        description="Every sweeper's next tick publishes its backlog at the model's rate limit.",
    )
    def destroy(self, request: Request, model: str) -> Response:
        body = validated(ResumeRequestSerializer, request)
        if not delivery_resume(model=self.named_model(model), reason=body["reason"]):
            raise NotFound(f"{model} is not paused.")
        return Response(status=status.HTTP_204_NO_CONTENT)

    def named_model(self, label: str) -> type[ScheduledEvent]:
        with as_bad_request():
            return pausable_model(label)
