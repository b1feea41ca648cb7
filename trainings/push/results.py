"""What each player's push came to, in PushResult, on a connection of its own: committed at
once, whatever the handler's transaction does next."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Sequence

from django.db import DEFAULT_DB_ALIAS, connections
from django.utils import timezone
from django.utils.connection import ConnectionDoesNotExist

from trainings.models import Player, PushResult
from trainings.push.backends import Push, log
from trainings.push.fcm import UNREGISTERED, Outcome, Result

RESULTS_DB = "trainings_push_results"


def results_db() -> str:
    """The alias of a second connection to the default database, for this thread.

    Autocommit, outside the handler's transaction: a result written on it is committed at
    once, whatever the handler's transaction does next. Registered for the thread only (not in
    DATABASES), so nothing else (migrations, the test runner's databases) sees it. On SQLite
    (the embedded mode) a second writer would wait for the handler's write lock, so results
    share the handler's transaction there and a retried event may repeat pushes.
    """
    default = connections[DEFAULT_DB_ALIAS]
    if default.vendor != "postgresql":
        return DEFAULT_DB_ALIAS
    try:
        side = connections[RESULTS_DB]
    except ConnectionDoesNotExist:
        side = type(default)(copy.deepcopy(default.settings_dict), RESULTS_DB)
        connections[RESULTS_DB] = side
    side.close_if_unusable_or_obsolete()  # CONN_MAX_AGE and health checks, as for default
    return RESULTS_DB


def close_results_connection() -> None:
    with contextlib.suppress(ConnectionDoesNotExist):
        connections[RESULTS_DB].close()


class ResultLog:
    """The PushResult rows of one batch's events, read and written on the results connection.

    Tries of one event never overlap (the handler holds the reminder's row lock throughout),
    so a read-modify-write here races with nothing.
    """

    def __init__(self, pushes: Sequence[Push]) -> None:
        self.db = results_db()
        existing = PushResult.objects.using(self.db).filter(
            event_id__in={push.event_id for push in pushes},
            player_id__in={push.player.pk for push in pushes},
        )
        self.rows = {(row.event_id, row.player_id): row for row in existing}

    def is_final(self, push: Push) -> bool:
        row = self.rows.get((push.event_id, push.player.pk))
        return row is not None and row.status in PushResult.FINAL

    def record(self, push: Push, outcome: Outcome) -> None:
        row = self.rows.get((push.event_id, push.player.pk)) or PushResult(
            event_id=push.event_id,
            training_id=push.training.pk,
            player_id=push.player.pk,
            kind=push.kind,
        )
        row.status = outcome.status
        row.message_name = outcome.message_name
        row.error_code = outcome.error_code
        row.error = outcome.error
        row.attempts += 1 if outcome.tried else 0
        row.sent_at = timezone.now() if outcome.status == Result.SENT else None
        row.save(using=self.db)
        self.rows[(row.event_id, row.player_id)] = row
        if outcome.error_code == UNREGISTERED:
            forget_token(push, using=self.db)


def forget_token(push: Push, *, using: str) -> None:
    # Only the token we sent to: the app may have registered a new one meanwhile.
    Player.objects.using(using).filter(pk=push.player.pk, push_token=push.player.push_token).update(
        push_token=""
    )
    log.info("player %s: push token unregistered, cleared", push.player.pk)
