"""What a push is, the backend protocol, the two backends that need no credentials, and the
one TRAININGS_PUSH_BACKEND names."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
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


@runtime_checkable
class PushBackend(Protocol):
    def send(self, pushes: Sequence[Push]) -> None: ...


def send_each(backend: PushBackend, pushes: Mapping[str, Sequence[Push]]) -> dict[str, Exception]:
    """The pushes of several reminders (by event id), each reminder's apart: {event id: why its
    pushes failed}. A backend may send them all at once (`send_each`); otherwise each event's
    go through `send` in a savepoint of their own, so one failing rolls back only its own."""
    together = getattr(backend, "send_each", None)
    if together is not None:
        failures: dict[str, Exception] = together(pushes)
        return failures
    failures = {}
    for event_id, of_event in pushes.items():
        try:
            with transaction.atomic():
                backend.send(of_event)
        except Exception as exc:
            failures[event_id] = exc
    return failures


class RecordingPushBackend:
    """Records what was sent; runs inside the handler's transaction, so it is effect-once."""

    def send_each(self, pushes: Mapping[str, Sequence[Push]]) -> dict[str, Exception]:
        self.send([push for of_event in pushes.values() for push in of_event])  # one INSERT
        return {}

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


BACKEND_FORM = (
    "the dotted path of a push backend class (one with send(pushes)), such as "
    "trainings.push.RecordingPushBackend, trainings.push.LoggingPushBackend or "
    "trainings.push.HttpPushBackend"
)


def get_push_backend() -> PushBackend:
    path = settings.TRAININGS_PUSH_BACKEND
    try:
        backend_class = import_string(path)
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"TRAININGS_PUSH_BACKEND={path!r} is not valid: expected {BACKEND_FORM} ({exc})."
        ) from None
    # Only a class is called: a function at the path (os.system) would run with no arguments.
    if not (isinstance(backend_class, type) and issubclass(backend_class, PushBackend)):
        raise ImproperlyConfigured(
            f"TRAININGS_PUSH_BACKEND={path!r} is not valid: expected {BACKEND_FORM}; "
            f"{path} is not a class with send(pushes)."
        )
    backend: PushBackend = backend_class()
    return backend
