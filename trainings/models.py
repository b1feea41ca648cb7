"""MyCoach's domain: teams, players, trainings, and the reminders scheduled around them."""

from datetime import datetime, time
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q

from scheduling import ScheduledEvent
from scheduling.quiet import DailyQuietHours, QuietPolicy, validate_time_zone
from trainings import ladder
from trainings.kinds import InvitationStatus, NotificationKind, Phase

# No push between 22:00 and 07:00 in the team's time zone.
NIGHT_START, NIGHT_END = time(22), time(7)


class Team(models.Model):
    name = models.CharField(max_length=200)
    timezone = models.CharField(
        max_length=64,
        default="UTC",
        validators=[validate_time_zone],
        help_text="IANA time zone name, e.g. Europe/Paris: the team's quiet hours are in it.",
    )
    quiet_hours = models.BooleanField(
        default=True,
        help_text="No reminder is pushed between 22:00 and 07:00 in the team's time zone: "
        "those due then go at 07:00, post-training ones folded into one.",
    )

    class Meta:
        ordering = ("name", "pk")

    def __str__(self) -> str:
        return self.name


class Player(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="players")
    name = models.CharField(max_length=200)
    push_token = models.CharField(max_length=255, blank=True, default="")
    # The user who is this player: over REST a user answers the questionnaire for their own
    # player only (staff for any); none, and only staff answer for the player.
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="player",
    )

    class Meta:
        ordering = ("name", "pk")

    def __str__(self) -> str:
        return self.name


# django-stubs cannot resolve the reverse manager of a ScheduledEvent subclass (its manager
# comes from a generic QuerySet.as_manager()), hence the ignore on this class.
class Training(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="trainings")
    start_at = models.DateTimeField()
    end_at = models.DateTimeField()
    questionnaires_enabled = models.BooleanField(default=True)
    invitations_enabled = models.BooleanField(default=False)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("start_at", "pk")
        constraints = [
            models.CheckConstraint(
                condition=Q(end_at__gt=F("start_at")), name="training_ends_after_start"
            )
        ]

    def __str__(self) -> str:
        return f"{self.team} training at {self.start_at:%Y-%m-%d %H:%M %Z}"

    def clean(self) -> None:
        if self.start_at and self.end_at and self.end_at <= self.start_at:
            raise ValidationError({"end_at": "The training must end after it starts."})

    @property
    def is_cancelled(self) -> bool:
        return self.cancelled_at is not None


class QuestionnaireAnswer(models.Model):
    training = models.ForeignKey(Training, on_delete=models.CASCADE, related_name="answers")
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="answers")
    phase = models.CharField(max_length=8, choices=Phase.choices)
    answered_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["training", "player", "phase"], name="one_answer_per_training_player_phase"
            )
        ]

    def __str__(self) -> str:
        return f"{self.player} answered {self.phase} for training {self.training_id}"


class Invitation(models.Model):
    training = models.ForeignKey(Training, on_delete=models.CASCADE, related_name="invitations")
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="invitations")
    status = models.CharField(
        max_length=16, choices=InvitationStatus.choices, default=InvitationStatus.PENDING
    )
    replied_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("training", "player")
        constraints = [
            models.UniqueConstraint(
                fields=["training", "player"], name="one_invitation_per_training_player"
            )
        ]

    def __str__(self) -> str:
        return f"{self.player} invited to training {self.training_id}: {self.status}"


class PushNotification(models.Model):
    """What the default push backend sent: one row per player and reminder."""

    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="pushes")
    training = models.ForeignKey(Training, on_delete=models.CASCADE, related_name="pushes")
    kind = models.CharField(max_length=32, choices=NotificationKind.choices)
    title = models.CharField(max_length=200)
    body = models.TextField()
    event_id = models.CharField(max_length=200, blank=True, default="")
    sent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-sent_at", "-pk")

    def __str__(self) -> str:
        return f"{self.kind} to {self.player} at {self.sent_at:%Y-%m-%d %H:%M}"


class PushResult(models.Model):
    """What the HTTP push backend got back for one player and one event (reminder try).

    Written on a connection of its own, committed right after each request, so it survives the
    handler's transaction rolling back when a retryable failure sends the event round again.
    """

    class Status(models.TextChoices):
        SENT = "sent", "Sent"
        RETRYABLE = "failed_retryable", "Failed, will retry"
        PERMANENT = "failed_permanent", "Failed, not retried"
        SKIPPED = "skipped", "Skipped: no device token"

    # The outcomes a later try of the same event leaves alone.
    FINAL = (Status.SENT, Status.PERMANENT, Status.SKIPPED)

    # No foreign key to the scheduled row: its handler holds that row FOR UPDATE while the
    # results are written on another connection, and a key check would wait for it forever.
    event_id = models.CharField(max_length=200)
    training = models.ForeignKey(Training, on_delete=models.CASCADE, related_name="push_results")
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="push_results")
    kind = models.CharField(max_length=32, choices=NotificationKind.choices)
    status = models.CharField(max_length=16, choices=Status.choices)
    message_name = models.CharField(
        max_length=255, blank=True, default="", help_text="The provider's id of the sent message."
    )
    error_code = models.CharField(max_length=64, blank=True, default="")
    error = models.CharField(max_length=500, blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-pk")
        constraints = [
            # Also the index of a retry's "who is done already" lookup by event_id.
            models.UniqueConstraint(
                fields=["event_id", "player"], name="one_push_result_per_event_player"
            )
        ]

    def __str__(self) -> str:
        return f"{self.event_id} to {self.player}: {self.status}"


@lru_cache(maxsize=128)
def night_in(zone: str) -> DailyQuietHours:
    return DailyQuietHours(start=NIGHT_START, end=NIGHT_END, tz=zone)


def team_quiet_hours(row: "ScheduledTrainingNotification") -> DailyQuietHours | None:
    team = row.training.team
    return night_in(team.timezone) if team.quiet_hours else None


class ScheduledTrainingNotification(ScheduledEvent):
    # No index of its own: the rung constraint below leads with training and serves its lookups,
    # and every index costs each move and each mark-delivered an extra insert per row.
    training = models.ForeignKey(
        Training, on_delete=models.CASCADE, related_name="scheduled", db_index=False
    )
    kind = models.CharField(max_length=32, choices=NotificationKind.choices)
    offset = models.DurationField(help_text="Signed: from the start (pre, invitation) or end.")

    handler_task = "trainings.send_training_reminder"
    handler_batch_size = 100  # reminders a handler takes at once (trainings.tasks)
    queue = "trainings"
    related_for_event = ("training",)
    # Reminders due in the team's night go at 07:00, one per training and kind (the latest
    # rung: post-training ones fold into one); one that would be late by then is cancelled.
    quiet_hours = staticmethod(team_quiet_hours)
    quiet_policy = QuietPolicy.FOLD
    quiet_fold_by = ("training", "kind")
    quiet_related = ("training__team",)
    # One club's 10,000 players must not delay every other team's reminders: a limited sweep
    # takes each team's due reminders in turn.
    fairness_key = "training__team"
    # A team's reminders one admin search away: the start of its name, any case, found through
    # an index on the teams (migration 0012). Not "contains", nor the players' names (a join
    # that repeats each row once per player, then DISTINCT): either scans every row.
    search_fields = ("^training__team__name",)

    class Meta(ScheduledEvent.Meta):
        db_table = "scheduled_training_notification"
        constraints = [
            # A rung exists at most once per training; moves update it, never add a twin.
            models.UniqueConstraint(
                fields=["training", "kind", "offset"], name="one_row_per_training_rung"
            )
        ]

    def expires_at(self) -> datetime | None:
        return ladder.expiry(self.kind, start_at=self.training.start_at, due_at=self.due_at)

    def event_data(self) -> dict[str, Any]:
        return {
            "training": self.training_id,
            "kind": self.kind,
            "offset_seconds": int(self.offset.total_seconds()),
        }
