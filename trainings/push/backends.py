"""What a push is, the backend protocol, the two backends that need no credentials, and the
one TRAININGS_PUSH_BACKEND names."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from trainings.models import Player, PushNotification, Training

log = logging.getLogger("trainings.push")  # one logger for the package, as hosts configure it


@dataclass(frozen=True)
class Push:
    player: Player
    training: Training
    kind: str
    title: str
    body: str
    event_id: str


class PushBackend(Protocol):
    def send(self, pushes: Sequence[Push]) -> None: ...


class RecordingPushBackend:
    """Records what was sent; runs inside the handler's transaction, so it is effect-once."""

    def send(self, pushes: Sequence[Push]) -> None:
        PushNotification.objects.bulk_create(
            PushNotification(
                player=push.player,
                training=push.training,
                kind=push.kind,
                title=push.title,
                body=push.body,
                event_id=push.event_id,
            )
            for push in pushes
        )


class LoggingPushBackend:
    def send(self, pushes: Sequence[Push]) -> None:
        for push in pushes:
            log.info(
                "push %s to player %s for training %s: %s",
                push.kind,
                push.player.pk,
                push.training.pk,
                push.title,
            )


def get_push_backend() -> PushBackend:
    path = settings.TRAININGS_PUSH_BACKEND
    try:
        backend_class = import_string(path)
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"TRAININGS_PUSH_BACKEND={path!r} is not valid: expected a dotted class path such "
            "as trainings.push.RecordingPushBackend, trainings.push.LoggingPushBackend or "
            f"trainings.push.HttpPushBackend ({exc})."
        ) from None
    backend: PushBackend = backend_class()
    return backend
