"""The reminder ladder around a training: which rungs exist and when each is due.

Pure functions over `now`, so tests need no clock. Offsets are exact durations added in UTC:
adding them to a local wall-clock time would shift rungs that straddle a DST change.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from trainings.kinds import NotificationKind

PRE_QUESTIONNAIRE = tuple(timedelta(minutes=-m) for m in (90, 75, 60, 45, 30, 15))
POST_QUESTIONNAIRE = tuple(timedelta(minutes=15 * i) for i in range(1, 13))
INVITATION = (timedelta(days=-3), timedelta(days=-2), timedelta(days=-1), timedelta(hours=-6))

OFFSETS: dict[NotificationKind, tuple[timedelta, ...]] = {
    NotificationKind.PRE_QUESTIONNAIRE: PRE_QUESTIONNAIRE,
    NotificationKind.POST_QUESTIONNAIRE: POST_QUESTIONNAIRE,
    NotificationKind.INVITATION: INVITATION,
}

# The earliest rung counts back from the start, the latest forward from the end.
EARLIEST = min(PRE_QUESTIONNAIRE + INVITATION)
LATEST = max(POST_QUESTIONNAIRE)

# Kinds whose offsets count from the training's start; the others count from its end.
FROM_START = frozenset({NotificationKind.PRE_QUESTIONNAIRE, NotificationKind.INVITATION})

# How long after its due time a post-questionnaire reminder is still worth sending.
POST_QUESTIONNAIRE_LATENESS = timedelta(hours=4)


@dataclass(frozen=True)
class Rung:
    kind: NotificationKind
    offset: timedelta
    due_at: datetime


def enabled_kinds(*, questionnaires: bool, invitations: bool) -> list[NotificationKind]:
    kinds = []
    if invitations:
        kinds.append(NotificationKind.INVITATION)
    if questionnaires:
        kinds += [NotificationKind.PRE_QUESTIONNAIRE, NotificationKind.POST_QUESTIONNAIRE]
    return kinds


def anchor(kind: str, *, start_at: datetime, end_at: datetime) -> datetime:
    return (start_at if kind in FROM_START else end_at).astimezone(UTC)


def future_rungs(
    *, start_at: datetime, end_at: datetime, kinds: list[NotificationKind], now: datetime
) -> list[Rung]:
    """Every rung of `kinds` due strictly after `now`; rungs already past are left out."""
    rungs = [
        Rung(kind, offset, anchor(kind, start_at=start_at, end_at=end_at) + offset)
        for kind in kinds
        for offset in OFFSETS[kind]
    ]
    return [rung for rung in rungs if rung.due_at > now]


def expiry(kind: str, *, start_at: datetime, due_at: datetime) -> datetime:
    """A reminder not sent by this instant is no longer worth sending."""
    if kind in FROM_START:
        return start_at
    return due_at + POST_QUESTIONNAIRE_LATENESS
