import json
from datetime import datetime, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db.models import Min

from scheduling.delivery.pauses.services import paused_labels
from scheduling.rows.clock import database_now
from scheduling.rows.databases import database_of
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.registry import scheduled_models
from scheduling.rows.states import Status


def model_status(model: type[ScheduledEvent], now: datetime, *, paused: bool) -> dict[str, Any]:
    rows = model.objects.all()
    due = rows.due(now)
    oldest = due.aggregate(oldest=Min("due_at"))["oldest"]
    hour_ago = now - timedelta(hours=1)
    return {
        "model": model._meta.label,
        "pending": rows.pending().count(),
        "due_now": due.count(),
        "oldest_due_lateness_s": round((now - oldest).total_seconds(), 3) if oldest else None,
        "delivered_last_hour": rows.filter(
            status=Status.DELIVERED, delivered_at__gte=hour_ago
        ).count(),
        "failed_last_hour": rows.filter(status=Status.FAILED, updated_at__gte=hour_ago).count(),
        "paused": paused,  # scheduling_pause: its sweeps claim nothing until scheduling_resume
    }


class Command(BaseCommand):
    help = (
        "Per scheduled model: pending, due now, oldest lateness, delivered and failed in the "
        "last hour, and whether its delivery is paused."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        # Each model's "now" by the clock of the database it is on.
        paused = paused_labels()
        report = [
            model_status(
                model,
                database_now(database_of(model)),
                paused=model._meta.label_lower in paused,
            )
            for model in scheduled_models()
        ]
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        for item in report:
            self.stdout.write(" ".join(f"{key}={value}" for key, value in item.items()))
