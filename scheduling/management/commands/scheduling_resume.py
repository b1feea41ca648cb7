from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from scheduling.delivery.pauses.commands import (
    add_model_argument,
    command_actor,
    model_named,
    state_line,
)
from scheduling.delivery.pauses.services import delivery_resume
from scheduling.rows.actors import actor


class Command(BaseCommand):
    help = (
        "Resume a paused model's delivery: every sweeper's next tick publishes its backlog at "
        "the model's rate limit."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_model_argument(parser)

    def handle(self, *args: Any, label: str, reason: str, **options: Any) -> None:
        model = model_named(label)
        with actor(command_actor()):
            resumed = delivery_resume(model=model, reason=reason)
        self.stdout.write(state_line(model) + ("" if resumed else " (was not paused)"))
