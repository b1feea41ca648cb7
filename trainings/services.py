"""Writes for the trainings domain. Each service is one transaction and keeps the scheduled
reminders in step with the training."""

from collections.abc import Sequence
from datetime import UTC, datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import (
    Case,
    DateTimeField,
    DurationField,
    F,
    Func,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.expressions import ExpressionWrapper
from django.db.models.functions import Now
from django.db.models.lookups import GreaterThan
from django.utils import timezone

from scheduling import ScheduledEventQuerySet, Status, require_aware, storable_utc
from scheduling.quiet import cancelled_for_quiet_hours
from trainings import ladder
from trainings.kinds import PHASE_OF_KIND, InvitationStatus, NotificationKind, Phase
from trainings.models import (
    Invitation,
    Player,
    QuestionnaireAnswer,
    ScheduledTrainingNotification,
    Team,
    Training,
)
from trainings.push import Push, get_push_backend

BULK_BATCH = 5000
MOVED_INTO_THE_PAST = "training moved: this reminder would be in the past"
TRAINING_CANCELLED = "training cancelled"


def training_create(
    *,
    team: Team,
    start_at: datetime,
    end_at: datetime,
    questionnaires_enabled: bool = True,
    invitations_enabled: bool = False,
) -> Training:
    check_times(start_at=start_at, end_at=end_at)
    with transaction.atomic():
        training = Training.objects.create(
            team=team,
            start_at=start_at,
            end_at=end_at,
            questionnaires_enabled=questionnaires_enabled,
            invitations_enabled=invitations_enabled,
        )
        if invitations_enabled:
            invite_team(training)
        ScheduledTrainingNotification.objects.bulk_create(ladder_rows(training, now=timezone.now()))
    return training


def training_create_many(
    *,
    team: Team,
    times: Sequence[tuple[datetime, datetime]],
    questionnaires_enabled: bool = True,
    invitations_enabled: bool = False,
) -> list[Training]:
    """training_create for a season at once: (start_at, end_at) pairs, a few INSERTs in all."""
    if not times:
        return []
    for start_at, end_at in times:
        check_times(start_at=start_at, end_at=end_at)
    now = timezone.now()
    with transaction.atomic():
        trainings = Training.objects.bulk_create(
            Training(
                team=team,
                start_at=start_at,
                end_at=end_at,
                questionnaires_enabled=questionnaires_enabled,
                invitations_enabled=invitations_enabled,
            )
            for start_at, end_at in times
        )
        if invitations_enabled:
            invite_team(*trainings)
        ScheduledTrainingNotification.objects.bulk_create(
            [row for training in trainings for row in ladder_rows(training, now=now)],
            batch_size=BULK_BATCH,
        )
    return trainings


def training_move(*, training: Training, start_at: datetime, end_at: datetime) -> int:
    """Moves the training and every pending reminder with it; returns the rows moved."""
    check_times(start_at=start_at, end_at=end_at)
    now = timezone.now()
    with transaction.atomic():
        lock_reminders(training)
        # The row lock orders this move after a concurrent cancel or move of the same training,
        # so the cancelled check below and the times we write are the latest ones.
        locked = Training.objects.select_for_update().get(pk=training.pk)
        locked.start_at, locked.end_at = start_at, end_at
        locked.save(update_fields=["start_at", "end_at", "updated_at"])
        moved = move_pending_rows(locked, now=now, revive=not locked.is_cancelled)
        if not locked.is_cancelled:
            add_missing_rungs(locked, now=now)
    training.start_at, training.end_at = start_at, end_at
    training.updated_at = locked.updated_at
    return moved


def training_cancel(*, training: Training) -> int:
    """Cancels the training and its pending reminders; returns the reminders cancelled."""
    with transaction.atomic():
        lock_reminders(training)
        Training.objects.filter(pk=training.pk, cancelled_at__isnull=True).update(
            cancelled_at=Now(), updated_at=Now()
        )
        cancelled = reminders_of(training).cancel(TRAINING_CANCELLED)
    training.refresh_from_db(fields=["cancelled_at", "updated_at"])
    return cancelled


def questionnaire_answer(*, training: Training, player: Player, phase: str) -> QuestionnaireAnswer:
    """Records the answer once; answering again returns the first answer."""
    if phase not in Phase.values:
        raise ValidationError({"phase": f"Expected one of {', '.join(Phase.values)}."})
    if player.team_id != training.team_id:
        raise ValidationError({"player": "This player is not in the training's team."})
    with transaction.atomic():
        answer, _ = QuestionnaireAnswer.objects.get_or_create(
            training=training, player=player, phase=phase
        )
    return answer


def invitation_reply(*, invitation: Invitation, status: str) -> Invitation:
    replies = [InvitationStatus.ACCEPTED.value, InvitationStatus.DENIED.value]
    if status not in replies:
        raise ValidationError({"status": f"Expected one of {', '.join(replies)}."})
    with transaction.atomic():
        invitation.status = status
        invitation.replied_at = timezone.now()
        invitation.save(update_fields=["status", "replied_at"])
    return invitation


def reminder_send(
    *,
    notification: ScheduledTrainingNotification,
    event_id: str,
    players: Sequence[Player] | None = None,
) -> int:
    """Sends one reminder to whoever still has to act, computed now (or `players`, read for a
    whole batch by `trainings.reminders`); returns pushes sent.

    Runs inside the handler's effect-once transaction (handle_once's, or the row's own in a
    batch's `each`), with the reminder's row locked and no other reminder's.
    """
    # Locked so a concurrent training_cancel either commits first (and nothing is sent) or
    # waits until this reminder's pushes are out. The handler holds the reminder's row already:
    # the lock order is scheduled rows, then the training, as in training_move and
    # training_cancel.
    training = Training.objects.select_for_update(no_key=True).get(pk=notification.training_id)
    notification.training = training  # expiry and message from the locked, current times
    deadline = notification.expires_at()
    # A message that waited in a busy queue past the reminder's expiry is no longer useful.
    if training.is_cancelled or (deadline is not None and timezone.now() > deadline):
        return 0
    if players is None:
        players = list(recipients(training=training, kind=notification.kind))
    title, body = message_for(notification)
    get_push_backend().send(
        [Push(player, training, notification.kind, title, body, event_id) for player in players]
    )
    return len(players)


def recipients(*, training: Training, kind: str) -> QuerySet[Player]:
    if kind == NotificationKind.INVITATION:
        return Player.objects.filter(
            invitations__training=training, invitations__status=InvitationStatus.PENDING
        )
    answered = QuestionnaireAnswer.objects.filter(
        training=training, phase=PHASE_OF_KIND[NotificationKind(kind)]
    ).values("player_id")
    return Player.objects.filter(team_id=training.team_id).exclude(pk__in=answered)


def message_for(notification: ScheduledTrainingNotification) -> tuple[str, str]:
    training = notification.training
    starts = f"{training.start_at.astimezone(UTC):%a %d %b %H:%M} UTC"
    if notification.kind == NotificationKind.INVITATION:
        return "Will you attend?", f"Training on {starts}: please accept or decline."
    if notification.kind == NotificationKind.PRE_QUESTIONNAIRE:
        # From the time it goes out: quiet hours may have held it past its rung's time.
        minutes = int((training.start_at - notification.due_at).total_seconds() // 60)
        return (
            "Questionnaire before your training",
            f"Your training starts in {minutes} minutes ({starts}). Please answer the questionnaire.",
        )
    return "How did the training go?", "Please answer the post-training questionnaire."


# --- helpers -------------------------------------------------------------------------------


def check_times(*, start_at: datetime, end_at: datetime) -> None:
    require_aware(start_at, "start_at")
    require_aware(end_at, "end_at")
    check_storable(start_at, "start_at")
    check_storable(end_at, "end_at")
    if end_at <= start_at:
        raise ValidationError({"end_at": "The training must end after it starts."})
    # Every rung must be storable too, or a move would fail in the database mid-transaction.
    check_storable(start_at + ladder.EARLIEST, "start_at")
    check_storable(end_at + ladder.LATEST, "end_at")


def check_storable(value: datetime, field: str) -> None:
    try:
        storable_utc(value)
    except ValueError as exc:
        raise ValidationError(
            {field: f"{exc} Every reminder must fall in that range too."}
        ) from None


def invite_team(*trainings: Training) -> None:
    """A pending invitation per player of each training's team (one team per call)."""
    players = Player.objects.filter(team_id=trainings[0].team_id).values_list("pk", flat=True)
    Invitation.objects.bulk_create(
        [Invitation(training=t, player_id=p) for t in trainings for p in players],
        batch_size=BULK_BATCH,
    )


def enabled_kinds(training: Training) -> list[NotificationKind]:
    return ladder.enabled_kinds(
        questionnaires=training.questionnaires_enabled, invitations=training.invitations_enabled
    )


def ladder_rows(training: Training, *, now: datetime) -> list[ScheduledTrainingNotification]:
    """The training's rungs due after `now`, as unsaved rows."""
    rungs = ladder.future_rungs(
        start_at=training.start_at, end_at=training.end_at, kinds=enabled_kinds(training), now=now
    )
    return [
        ScheduledTrainingNotification(
            training=training, kind=rung.kind, offset=rung.offset, due_at=rung.due_at
        )
        for rung in rungs
    ]


def add_missing_rungs(training: Training, *, now: datetime) -> None:
    """After a move: the future rungs a training never had (say, past when it was created)."""
    full = sum(len(ladder.OFFSETS[kind]) for kind in enabled_kinds(training))
    existing = set(reminders_of(training).values_list("kind", "offset"))
    if len(existing) >= full:
        return  # the common case: every rung exists already
    # Not ignore_conflicts, which gives no pks back for quiet hours' history: the training's
    # row lock (training_move) keeps a concurrent move from adding the same rungs.
    rows = ladder_rows(training, now=now)
    ScheduledTrainingNotification.objects.bulk_create(
        [row for row in rows if (row.kind, row.offset) not in existing]
    )


def lock_reminders(training: Training) -> None:
    """Lock the training's reminder rows before the training itself: the handler holds its row
    when it locks the training, so taking them the other way round could deadlock."""
    list(reminders_of(training).order_by("pk").select_for_update().values_list("pk", flat=True))


def reminders_of(training: Training) -> ScheduledEventQuerySet[ScheduledTrainingNotification]:
    return ScheduledTrainingNotification.objects.filter(training_id=training.pk)


def move_pending_rows(training: Training, *, now: datetime, revive: bool = True) -> int:
    """One UPDATE: every pending row to its anchor + offset, a new version each.

    A rung the move puts in the past is cancelled rather than sent late, as it would not have
    been created for a training at these times. With `revive`, a rung an earlier move
    cancelled that way, or quiet hours folded or skipped, is pending again if this move puts
    it back in the future.
    """
    due = new_due_at(training)
    in_future: GreaterThan[datetime] = GreaterThan(due, Value(now, output_field=DateTimeField()))
    movable = Q(status=Status.PENDING)
    if revive:
        # Rows the earlier times put in the past, or quiet hours folded or skipped: the new
        # times decide again (quiet hours apply to the moved rows after this UPDATE).
        cancelled_by_times = Q(status=Status.CANCELLED, cancel_reason=MOVED_INTO_THE_PAST)
        movable |= Q(in_future) & (cancelled_by_times | cancelled_for_quiet_hours())
    # Status stays a condition on the updated table itself, so PostgreSQL re-checks it on a
    # row a concurrent sweep has locked (a delivered row is never moved).
    rows = reminders_of(training).filter(movable).exclude(due_at=due)
    return rows.reschedule_with(
        "training moved",
        due_at=due,
        business_due_at=None,
        version=F("version") + 1,
        updated_at=Now(),
        status=Case(When(in_future, then=Value(Status.PENDING)), default=Value(Status.CANCELLED)),
        cancelled_at=Case(When(in_future, then=Value(None)), default=Now()),
        cancel_reason=Case(When(in_future, then=Value("")), default=Value(MOVED_INTO_THE_PAST)),
    )


EXACT_OFFSET = Func(
    F("offset"),
    template="make_interval(secs => extract(epoch from %(expressions)s))",
    output_field=DurationField(),
)


def new_due_at(training: Training) -> Case:
    # timestamptz + interval adds an interval's days as calendar days in the session's time
    # zone, so "-3 days" across a DST change would be 71 or 73 hours. The offset goes in as
    # seconds instead: exact durations, matching the ladder computed in Python, whatever the
    # session's time zone.
    def plus_offset(anchor: datetime) -> ExpressionWrapper:
        return ExpressionWrapper(
            Value(anchor.astimezone(UTC), output_field=DateTimeField()) + EXACT_OFFSET,
            output_field=DateTimeField(),
        )

    return Case(
        When(kind__in=ladder.FROM_START, then=plus_offset(training.start_at)),
        default=plus_offset(training.end_at),
        output_field=DateTimeField(),
    )
