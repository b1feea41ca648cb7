"""The recipients of a batch of reminders, read for the whole batch in four queries before its
reminders are handled one at a time (trainings.tasks), each in its own transaction.

Read without locks, at the batch's start, as the batch handler always read them: a player who
answers while the batch runs may still get that reminder. What must not be stale (the training
cancelled, its times, the reminder expired) is read again under the training's lock, per
reminder, by `services.reminder_send`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from trainings.kinds import PHASE_OF_KIND, InvitationStatus, NotificationKind
from trainings.models import (
    Invitation,
    Player,
    QuestionnaireAnswer,
    ScheduledTrainingNotification,
    Training,
)

Reminder = ScheduledTrainingNotification


def recipients_of(reminders: Sequence[Reminder]) -> dict[int, list[Player]]:
    """Each reminder's recipients (by its pk), as `services.recipients` names them for one:
    invitations to the players still to reply; questionnaires to the team's players who have
    not answered that phase."""
    invitations = [row for row in reminders if row.kind == NotificationKind.INVITATION]
    questionnaires = [row for row in reminders if row.kind != NotificationKind.INVITATION]
    invited = players_to_reply([row.training_id for row in invitations])
    teams, team_players, answered = teams_and_answers(questionnaires)
    recipients: dict[int, list[Player]] = {}
    for row in invitations:
        recipients[row.pk] = invited[row.training_id]
    for row in questionnaires:
        phase = PHASE_OF_KIND[NotificationKind(row.kind)]
        recipients[row.pk] = [
            player
            for player in team_players[teams.get(row.training_id, -1)]  # -1: training gone
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
) -> tuple[dict[int, int], dict[int, list[Player]], set[tuple[int, str, int]]]:
    """The reminders' trainings' teams ({training: team}), the players of those teams, and
    (training, phase, player) of every answer."""
    if not reminders:
        return {}, {}, set()
    training_ids = {row.training_id for row in reminders}
    teams = dict(Training.objects.filter(pk__in=training_ids).values_list("pk", "team_id"))
    by_team: defaultdict[int, list[Player]] = defaultdict(list)
    for player in Player.objects.filter(team_id__in=set(teams.values())):
        by_team[player.team_id].append(player)
    answers = QuestionnaireAnswer.objects.filter(training_id__in=training_ids).values_list(
        "training_id", "phase", "player_id"
    )
    return teams, by_team, set(answers)
