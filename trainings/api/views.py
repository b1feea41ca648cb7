from __future__ import annotations

from typing import Any, cast

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from scheduling.api import (
    ModelChangePermission,
    ModelViewPermission,
    RequestActor,
    ScheduledEventViewSet,
    as_bad_request,
)
from trainings.api.filters import ScheduledTrainingNotificationFilterSet, TrainingFilterSet
from trainings.api.serializers import (
    AnswerRequestSerializer,
    InvitationSerializer,
    PlayerSerializer,
    QuestionnaireAnswerSerializer,
    ScheduledTrainingNotificationSerializer,
    TeamSerializer,
    TrainingMoveSerializer,
    TrainingSerializer,
)
from trainings.models import Invitation, Player, ScheduledTrainingNotification, Team, Training
from trainings.services import (
    invitation_reply,
    questionnaire_answer,
    training_cancel,
    training_create,
    training_move,
)

NOT_ANSWERABLE = "No such training with this player in its team."
NOT_YOUR_PLAYER = (
    "Only the player themself (the user linked to the player) or staff may answer for a "
    "player: {why}."
)


class CanAnswer(BasePermission):
    def has_permission(self, request: Request, view: APIView) -> bool:
        return request.user.has_perm("trainings.add_questionnaireanswer")


class TeamViewSet(RequestActor, viewsets.ModelViewSet):
    queryset = Team.objects.order_by("pk")
    serializer_class = TeamSerializer
    permission_classes = [ModelViewPermission]
    filterset_fields = ("name",)


class PlayerViewSet(RequestActor, viewsets.ModelViewSet):
    queryset = Player.objects.order_by("pk")
    serializer_class = PlayerSerializer
    permission_classes = [ModelViewPermission]
    filterset_fields = ("team",)


class TrainingViewSet(RequestActor, viewsets.ModelViewSet):
    """Creating schedules the reminder ladder; changing the times moves it; DELETE removes it."""

    queryset = Training.objects.order_by("start_at", "pk")
    permission_classes = [ModelViewPermission]
    filterset_class = TrainingFilterSet
    # Any text routes (DRF's default): the answers action gives one answer to every training
    # id that is no training of the player's team, a malformed one too (no oracle).
    lookup_value_regex = "[^/.]+"

    def get_serializer_class(self) -> type[serializers.BaseSerializer]:
        if self.action in ("update", "partial_update"):
            return TrainingMoveSerializer
        return TrainingSerializer

    def perform_create(self, serializer: serializers.BaseSerializer) -> None:
        with as_bad_request():
            serializer.instance = training_create(**serializer.validated_data)

    def perform_update(self, serializer: serializers.BaseSerializer) -> None:
        training = cast(Training, serializer.instance)
        data = serializer.validated_data
        with as_bad_request():
            training_move(
                training=training,
                start_at=data.get("start_at", training.start_at),
                end_at=data.get("end_at", training.end_at),
            )

    @extend_schema(
        request=None,
        responses={
            200: inline_serializer(
                "TrainingCancelled",
                {
                    "cancelled": serializers.IntegerField(read_only=True),
                    "training": TrainingSerializer(),
                },
            )
        },
    )
    @action(detail=True, methods=["post"], permission_classes=[ModelChangePermission])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        training = self.get_object()
        cancelled = training_cancel(training=training)
        return Response({"cancelled": cancelled, "training": TrainingSerializer(training).data})

    @extend_schema(
        request=AnswerRequestSerializer,
        responses={
            201: QuestionnaireAnswerSerializer,
            403: inline_serializer("NotYourPlayer", {"detail": serializers.CharField()}),
            404: inline_serializer("NotAnswerable", {"detail": serializers.CharField()}),
        },
        description="A player of the training's team answers its questionnaire: the user linked "
        "to the player (Player.user), or staff for any player (403 otherwise, saying why). No "
        "such training, no such player and a player of another team are one 404, alike.",
    )
    @action(detail=True, methods=["post"], permission_classes=[CanAnswer])
    def answers(self, request: Request, pk: str | None = None) -> Response:
        serializer = AnswerRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        answers_for(request.user, serializer.validated_data["player"])
        training, player = answerable(str(pk), serializer.validated_data["player"])
        with as_bad_request():
            answer = questionnaire_answer(
                training=training, player=player, phase=serializer.validated_data["phase"]
            )
        return Response(QuestionnaireAnswerSerializer(answer).data, status=status.HTTP_201_CREATED)


def answers_for(user: Any, player_pk: int) -> None:
    """An answer stops the player's reminders: only the player's own user gives it, or staff.
    Decided on the user's own link alone, before any lookup of the body's player, so a 403
    tells nothing about other players."""
    if user.is_staff:
        return
    own = Player.objects.filter(user=user).values_list("pk", flat=True).first()
    if own == player_pk:
        return
    why = "this user is no player" if own is None else f"this user is player {own}"
    raise PermissionDenied(NOT_YOUR_PLAYER.format(why=why))


def answerable(training_pk: str, player_pk: int) -> tuple[Training, Player]:
    """The training and its team's player, or one 404 for every way they are not: answering
    needs no view permission, so the answer must not tell which trainings exist."""
    try:
        training = Training.objects.filter(pk=training_pk, team__players=player_pk).get()
    except (Training.DoesNotExist, ValueError, TypeError):
        raise NotFound(NOT_ANSWERABLE) from None
    return training, Player.objects.get(pk=player_pk)


class InvitationViewSet(
    RequestActor,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """Invitations are created with their training; players reply with PATCH {status}."""

    queryset = Invitation.objects.order_by("pk")
    serializer_class = InvitationSerializer
    permission_classes = [ModelViewPermission]
    filterset_fields = ("training", "player", "status")
    http_method_names = ["get", "patch", "head", "options"]

    def perform_update(self, serializer: serializers.BaseSerializer) -> None:
        with as_bad_request():
            invitation_reply(
                invitation=cast(Invitation, serializer.instance),
                status=serializer.validated_data["status"],
            )


class ScheduledTrainingNotificationViewSet(ScheduledEventViewSet):
    queryset = ScheduledTrainingNotification.objects.select_related("training")
    serializer_class = ScheduledTrainingNotificationSerializer
    filterset_class = ScheduledTrainingNotificationFilterSet
