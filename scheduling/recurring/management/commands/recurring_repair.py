from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from scheduling.recurring.services import schedules_repair


class Command(BaseCommand):
    help = (
        "Give enabled recurring schedules left without a next occurrence (it was cancelled by "
        "hand, or the schedule was edited around the ORM) their next one. Safe to run at any "
        "time, e.g. every few minutes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--limit", type=int, default=10_000, help="schedules per run")

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"repaired={schedules_repair(limit=options['limit'])}")
