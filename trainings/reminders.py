"""Reminders sent a batch at a time: the trainings of many reminders locked and their recipients
read in a few queries, and every push of the batch given to the backend at once (over one
connection for the HTTP backend), with each reminder's result apart.

Runs inside `handle_batch` (scheduling.delivery.handling.batches), with the reminders' rows locked.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from django.utils import timezone

from trainings.kinds import PHASE_OF_KIND, InvitationStatus, NotificationKind
from trainings.models import (
    Invitation,
    Player,
    QuestionnaireAnswer,
    ScheduledTrainingNotification,
    Training,
)
from trainings.push import Push, get_push_backend
from trainings.push.backends import send_each
from trainings.services import message_for

Reminder = ScheduledTrainingNotification


def reminders_send(*, reminders: Sequence[Reminder]) -> tuple[int, dict[int, Exception]]:
    """Sends each reminder to whoever still has to act, computed now: (pushes sent, {reminder
    pk: why its pushes failed}) for the reminders whose pushes failed, each apart."""
    due = still_useful(reminders, lock_trainings(reminders))
    pushes = pushes_of(due)
    failures = send_each(get_push_backend(), pushes)
    sent = sum(len(batch) for event_id, batch in pushes.items() if event_id not in failures)
    return sent, {row.pk: failures[row.event_id] for row in due if row.event_id in failures}


def lock_trainings(reminders: Sequence[Reminder]) -> dict[int, Training]:
    # Locked so that a concurrent training_cancel either commits first (and nothing is sent) or
    # waits until the pushes are out. The lock order is scheduled rows, then trainings (by pk),
    # as in training_move and training_cancel.
    ids = {row.training_id for row in reminders}
    trainings = Training.objects.select_for_update(no_key=True).filter(pk__in=ids).order_by("pk")
    return {training.pk: training for training in trainings}


def still_useful(reminders: Sequence[Reminder], trainings: dict[int, Training]) -> list[Reminder]:
    """The reminders whose training goes on and whose time has not passed; each given its
    locked, current training (expiry and message read its times)."""
    now, useful = timezone.now(), []
    for row in reminders:
        row.training = trainings[row.training_id]
        deadline = row.expires_at()
        # A message that waited in a busy queue past the reminder's expiry is no longer useful.
        if not row.training.is_cancelled and (deadline is None or now <= deadline):
            useful.append(row)
    return useful


def pushes_of(reminders: Sequence[Reminder]) -> dict[str, list[Push]]:
    """Each reminder's pushes, by its event id."""
    players = recipients_of(reminders)
    pushes = {}
    for row in reminders:
        title, body = message_for(row)
        pushes[row.event_id] = [
            Push(player, row.training, row.kind, title, body, row.event_id)
            for player in players[row.pk]
        ]
    return pushes


def recipients_of(reminders: Sequence[Reminder]) -> dict[int, list[Player]]:
    """Each reminder's recipients (by its pk), as `services.recipients` names them for one:
    invitations to the players still to reply; questionnaires to the team's players who have
    not answered that phase. Three queries, whatever the number of reminders."""
    invitations = [row for row in reminders if row.kind == NotificationKind.INVITATION]
    questionnaires = [row for row in reminders if row.kind != NotificationKind.INVITATION]
    invited = players_to_reply([row.training_id for row in invitations])
    team_players, answered = teams_and_answers(questionnaires)
    recipients: dict[int, list[Player]] = {}
    for row in invitations:
        recipients[row.pk] = invited[row.training_id]
    for row in questionnaires:
        phase = PHASE_OF_KIND[NotificationKind(row.kind)]
        recipients[row.pk] = [
            player
            for player in team_players[row.training.team_id]
            if (row.training_id, phase, player.pk) not in answered
        ]
    return recipients


def players_to_reply(training_ids: Iterable[int]) -> dict[int, list[Player]]:
    ids = set(training_ids)
    found: defaultdict[int, list[Player]] = defaultdict(list)
    if ids:
        pending = Invitation.objects.filter(training_id__in=ids, status=InvitationStatus.PENDING)
        for invitation in pending.select_related("player"):
            found[invitation.training_id].append(invitation.player)
    return found


def teams_and_answers(
    reminders: Sequence[Reminder],
) -> tuple[dict[int, list[Player]], set[tuple[int, str, int]]]:
    """The players of the reminders' teams, and (training, phase, player) of every answer."""
    if not reminders:
        return {}, set()
    by_team: defaultdict[int, list[Player]] = defaultdict(list)
    for player in Player.objects.filter(team_id__in={row.training.team_id for row in reminders}):
        by_team[player.team_id].append(player)
    answers = QuestionnaireAnswer.objects.filter(
        training_id__in={row.training_id for row in reminders}
    ).values_list("training_id", "phase", "player_id")
    return by_team, set(answers)
