"""What `scheduling_pause` and `scheduling_resume` share: the model argument, the actor a
command records, and the line each prints of a model's state."""

from __future__ import annotations

import getpass

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError, CommandParser

from scheduling.delivery.pauses.services import LABEL_FORM, pausable_model, pauses
from scheduling.rows.actors import process_actor
from scheduling.rows.models import ScheduledEvent


def add_model_argument(parser: CommandParser) -> None:
    parser.add_argument("label", help=f"the scheduled model, {LABEL_FORM}")
    parser.add_argument("--reason", default="", help="why, recorded and shown with the pause")


def model_named(label: str) -> type[ScheduledEvent]:
    try:
        return pausable_model(label)
    except ValidationError as exc:
        raise CommandError("; ".join(exc.message_dict["model"])) from None


def command_actor() -> str:
    """`command:alice@host`: the shell user who ran the command, on which host."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # a container's uid with no name
        user = "unknown"
    return process_actor(f"command:{user}")


def state_line(model: type[ScheduledEvent]) -> str:
    pause = pauses().get(model._meta.label_lower)
    if pause is None:
        return f"{model._meta.label}: delivering"
    why = f": {pause.reason}" if pause.reason else ""
    since = f"{pause.paused_at:%Y-%m-%d %H:%M:%S %Z}"
    return f"{model._meta.label}: paused by {pause.paused_by} at {since}{why}"
