"""Admin for the trainings domain. Every write that touches reminders goes through a service."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from django.utils import timezone

from scheduling.admin import (
    STORABLE_DATETIMES,
    AuditedAdmin,
    ScheduledEventAdmin,
    ScheduledEventInline,
    short_duration,
)
from trainings.models import (
    Invitation,
    Player,
    PushNotification,
    PushResult,
    QuestionnaireAnswer,
    ScheduledTrainingNotification,
    Team,
    Training,
)
from trainings.services import check_times, training_cancel, training_create, training_move

MOVABLE_FIELDS = ("start_at", "end_at")
FIXED_AFTER_CREATION = ("team", "questionnaires_enabled", "invitations_enabled")


class PlayerInline(admin.TabularInline):
    model = Player
    fields = ("name", "push_token")
    extra = 0


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "timezone", "quiet_hours")
    list_filter = ("quiet_hours",)
    search_fields = ("name",)
    inlines = (PlayerInline,)


class PushResultInline(admin.TabularInline):
    """What the HTTP push backend got back, per player and reminder; written by the handler."""

    model = PushResult
    fields = (
        "updated_at",
        "kind",
        "player",
        "status",
        "attempts",
        "error_code",
        "message_name",
        "event_id",
    )
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("-updated_at", "-pk")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[PushResult]:
        return super().get_queryset(request).select_related("player", "training")


class RecentPushResultInline(PushResultInline):
    """A player's results of the last weeks: every reminder of every training adds some."""

    RECENT = timedelta(days=30)
    verbose_name_plural = "push results (last 30 days)"

    # Methods, not attributes: the base's fields are class attributes django-stubs would not
    # let a subclass redeclare with another tuple type.
    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return tuple("training" if f == "player" else f for f in PushResultInline.fields)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.get_fields(request, obj)

    def get_queryset(self, request: HttpRequest) -> QuerySet[PushResult]:
        since = timezone.now() - self.RECENT
        return super().get_queryset(request).filter(updated_at__gte=since)


@admin.register(Player)
class PlayerAdmin(admin.ModelAdmin):
    list_display = ("name", "team", "user", "push_token")
    raw_id_fields = ("user",)
    list_filter = ("team",)
    search_fields = ("name", "team__name")
    list_select_related = ("team",)
    inlines = (RecentPushResultInline,)


class LadderInline(ScheduledEventInline):
    model = ScheduledTrainingNotification

    # Methods rather than attributes: the base declares these as instance attributes, which
    # django-stubs does not let a subclass override with class attributes.
    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ("kind", "offset", *ScheduledEventInline.fields)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.get_fields(request, obj)


class InvitationInline(admin.TabularInline):
    model = Invitation
    fields = ("player", "status", "replied_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


QUIET_HOURS_NOTE = (
    "A team with quiet hours on (the default; see the team's page) gets no reminder between "
    "22:00 and 07:00 in its time zone: a reminder due then waits until 07:00 (post-training ones "
    "folded into one), and one that would be too late by then is cancelled."
)


class TrainingForm(ModelForm):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "team" in self.fields:  # the creation page: the reminders follow the team's nights
            self.fields["team"].help_text = QUIET_HOURS_NOTE

    def clean(self) -> dict[str, Any]:
        # The services' checks (every rung storable, too) on the form, before save_model runs one.
        super().clean()
        cleaned = self.cleaned_data
        start_at, end_at = cleaned.get("start_at"), cleaned.get("end_at")
        if start_at is not None and end_at is not None:
            check_times(start_at=start_at, end_at=end_at)
        return cleaned


@admin.register(Training)
class TrainingAdmin(AuditedAdmin):  # moving or cancelling a training moves its reminders
    form = TrainingForm
    formfield_overrides = STORABLE_DATETIMES
    list_display = (
        "__str__",
        "team",
        "start_at",
        "end_at",
        "questionnaires_enabled",
        "invitations_enabled",
        "cancelled_at",
    )
    list_filter = ("team", "questionnaires_enabled", "invitations_enabled", "cancelled_at")
    search_fields = ("team__name",)
    date_hierarchy = "start_at"
    list_select_related = ("team",)
    inlines = (LadderInline, InvitationInline, PushResultInline)
    actions = ("cancel_trainings",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ("cancelled_at",)
        return (*FIXED_AFTER_CREATION, "cancelled_at")

    def save_model(
        self, request: HttpRequest, obj: Training, form: ModelForm, change: bool
    ) -> None:
        if not change:
            created = training_create(
                team=obj.team,
                start_at=obj.start_at,
                end_at=obj.end_at,
                questionnaires_enabled=obj.questionnaires_enabled,
                invitations_enabled=obj.invitations_enabled,
            )
            obj.pk = created.pk
            obj.refresh_from_db()
            if obj.team.quiet_hours:
                messages.info(request, quiet_hours_message(obj.team))
        elif set(MOVABLE_FIELDS) & set(form.changed_data):
            moved = training_move(training=obj, start_at=obj.start_at, end_at=obj.end_at)
            messages.info(request, f"Moved {moved} pending reminders with the training.")

    @admin.action(
        description="Cancel selected trainings and their reminders", permissions=["change"]
    )
    def cancel_trainings(self, request: HttpRequest, queryset: QuerySet[Training]) -> None:
        reminders = sum(training_cancel(training=training) for training in queryset)
        messages.success(request, f"Cancelled {queryset.count()} trainings, {reminders} reminders.")


def quiet_hours_message(team: Team) -> str:
    return (
        f"{team} has quiet hours on (22:00 to 07:00, {team.timezone}): its reminders due then "
        "wait until 07:00, or are cancelled if that is too late for them. Each reminder's "
        "history says what became of it."
    )


@admin.register(ScheduledTrainingNotification)
class ScheduledTrainingNotificationAdmin(ScheduledEventAdmin):
    # The changelist searches ScheduledTrainingNotification.search_fields (team, players).
    list_select_related = ("training__team",)

    # The business columns first, so they stay in view on a 1280 px screen beside the filters.
    list_display = (
        *("row", "kind", "when", "training_start", "team"),
        *("due_at", "state", "attempts", "error"),
    )

    def get_list_filter(self, request: HttpRequest) -> Any:
        return (
            *ScheduledEventAdmin.list_filter,
            "kind",
            ("training__team", admin.RelatedOnlyFieldListFilter),
            ("training__start_at", admin.DateFieldListFilter),
        )

    @admin.display(description="offset", ordering="offset")
    def when(self, row: ScheduledTrainingNotification) -> str:
        """`90 min before`, `15 min after`: from the start (pre, invitation) or the end (post)."""
        side = "before" if row.offset < timedelta(0) else "after"
        return f"{short_duration(abs(row.offset))} {side}"

    @admin.display(description="training", ordering="training__start_at")
    def training_start(self, row: ScheduledTrainingNotification) -> str:
        return f"{row.training.start_at:%Y-%m-%d %H:%M %Z}"

    @admin.display(description="team", ordering="training__team__name")
    def team(self, row: ScheduledTrainingNotification) -> Team:
        return row.training.team


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records written by services and handlers; the admin only shows them."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(PushNotification)
class PushNotificationAdmin(ReadOnlyAdmin):
    list_display = ("sent_at", "kind", "player", "training", "title")
    list_filter = ("kind", ("training__team", admin.RelatedOnlyFieldListFilter))
    search_fields = ("player__name", "title", "event_id")
    date_hierarchy = "sent_at"
    list_select_related = ("player", "training__team")


@admin.register(QuestionnaireAnswer)
class QuestionnaireAnswerAdmin(ReadOnlyAdmin):
    list_display = ("answered_at", "phase", "player", "training")
    list_filter = ("phase",)
    search_fields = ("player__name",)
    list_select_related = ("player", "training__team")


@admin.register(Invitation)
class InvitationAdmin(ReadOnlyAdmin):
    list_display = ("training", "player", "status", "replied_at")
    list_filter = ("status",)
    search_fields = ("player__name",)
    list_select_related = ("player", "training__team")
