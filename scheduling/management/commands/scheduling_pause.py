from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from scheduling.delivery.pauses.commands import (
    add_model_argument,
    command_actor,
    model_named,
    state_line,
)
from scheduling.delivery.pauses.services import delivery_pause
from scheduling.rows.actors import actor


class Command(BaseCommand):
    help = (
        "Pause a scheduled model's delivery on every sweeper of every host from its next tick: "
        "due rows stay pending, due times untouched; messages already published are still "
        "handled. scheduling_resume starts it again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_model_argument(parser)

    def handle(self, *args: Any, label: str, reason: str, **options: Any) -> None:
        model = model_named(label)
        with actor(command_actor()):
            delivery_pause(model=model, reason=reason)
        self.stdout.write(state_line(model))
