from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from scheduling.api import (
    IsoDurationField,
    ScheduledEventSerializer,
    StrictDateTimeField,
    row_id_field,
)
from trainings.kinds import InvitationStatus, Phase
from trainings.models import (
    Invitation,
    Player,
    QuestionnaireAnswer,
    ScheduledTrainingNotification,
    Team,
    Training,
)

MOVABLE_FIELDS = ("start_at", "end_at")


class TeamSerializer(serializers.ModelSerializer):
    class Meta:
        model = Team
        fields = ("id", "name", "timezone", "quiet_hours")


class PlayerSerializer(serializers.ModelSerializer):
    class Meta:
        model = Player
        fields = ("id", "team", "name", "push_token", "user")


class TrainingSerializer(serializers.ModelSerializer):
    start_at = StrictDateTimeField()
    end_at = StrictDateTimeField()

    class Meta:
        model = Training
        fields = (
            "id",
            "team",
            "start_at",
            "end_at",
            "questionnaires_enabled",
            "invitations_enabled",
            "cancelled_at",
            "created_at",
            "updated_at",
        )
        read_only_fields: tuple[str, ...] = ("cancelled_at", "created_at", "updated_at")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        start_at = attrs.get("start_at", getattr(self.instance, "start_at", None))
        end_at = attrs.get("end_at", getattr(self.instance, "end_at", None))
        if start_at is not None and end_at is not None and end_at <= start_at:
            raise serializers.ValidationError({"end_at": "The training must end after it starts."})
        return attrs


class TrainingMoveSerializer(TrainingSerializer):
    """PUT/PATCH of a training: only its times change, and its reminders move with them."""

    class Meta(TrainingSerializer.Meta):
        read_only_fields = tuple(
            f for f in TrainingSerializer.Meta.fields if f not in MOVABLE_FIELDS
        )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        fixed = sorted(set(self.initial_data) & set(self.Meta.read_only_fields))
        if fixed:
            raise serializers.ValidationError(
                {
                    name: "Cannot be changed after creation; only start_at and end_at can."
                    for name in fixed
                }
            )
        return super().validate(attrs)


class QuestionnaireAnswerSerializer(serializers.ModelSerializer):
    phase = serializers.ChoiceField(choices=Phase.choices)

    class Meta:
        model = QuestionnaireAnswer
        fields = ("id", "training", "player", "phase", "answered_at")
        read_only_fields = ("training", "answered_at")
        # One answer per phase is idempotent in the service, not a 400 here.
        validators: list[Any] = []


class AnswerRequestSerializer(serializers.Serializer):
    """An answer's body. The player is an id, not looked up here: the view finds it with the
    training, so an unknown player, an unknown training and a player of another team all get
    one answer."""

    player = row_id_field(Player, help_text="A player of the training's team.")
    phase = serializers.ChoiceField(choices=Phase.choices)


REPLIES = (InvitationStatus.ACCEPTED, InvitationStatus.DENIED)


class InvitationSerializer(serializers.ModelSerializer):
    # Every status reads back (a new invitation is pending); a reply sets accepted or denied.
    status = serializers.ChoiceField(
        choices=InvitationStatus.choices,
        help_text="pending until the player replies; a reply is accepted or denied",
    )

    class Meta:
        model = Invitation
        fields = ("id", "training", "player", "status", "replied_at")
        read_only_fields = ("training", "player", "replied_at")

    def validate_status(self, value: str) -> str:
        if value not in REPLIES:
            raise serializers.ValidationError("A reply is accepted or denied.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # A reply is its status: a PATCH without one has nothing to record.
        if "status" not in attrs:
            raise serializers.ValidationError({"status": "This field is required."})
        return attrs


@extend_schema_field(
    {
        "type": "string",
        "pattern": r"^-?P(?!$)(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$",
        "example": "-PT1H30M",
        "description": "A signed ISO 8601 duration: negative is before.",
    }
)
class SignedIsoDurationField(IsoDurationField):
    """An offset may be negative, which the "duration" format (RFC 3339) has no sign for."""


class ScheduledTrainingNotificationSerializer(ScheduledEventSerializer):
    team = serializers.IntegerField(source="training.team_id", read_only=True)
    offset = SignedIsoDurationField(
        read_only=True, help_text="From the start (pre, invitation) or the end (post)."
    )

    class Meta(ScheduledEventSerializer.Meta):
        model = ScheduledTrainingNotification
        fields = (*ScheduledEventSerializer.Meta.fields, "training", "team", "kind", "offset")
        read_only_fields = fields
