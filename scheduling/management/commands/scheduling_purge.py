from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Model

from scheduling.rows.partitions import maintain_all
from scheduling.rows.purge import (
    count_purgeable,
    has_history,
    purge_model,
    purge_orphans,
    purged_models,
)
from scheduling.rows.registry import get_scheduled_model


class Command(BaseCommand):
    help = (
        "Delete done rows older than their retention: handled, cancelled and (without a handler)"
        " delivered after SCHEDULING_KEEP_DONE_DAYS, failed and expired after"
        " SCHEDULING_KEEP_FAILED_DAYS. Never a pending row, nor one awaiting its handler. Models"
        " that apps registered for the purge (keyed jobs, for one) go by their own rules. A deleted"
        " row's history goes with it, and so do entries whose row was deleted otherwise."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="print the counts per model, delete nothing"
        )
        parser.add_argument("--model", help="app_label.ModelName (default: every scheduled model)")

    def handle(self, *args: Any, dry_run: bool, model: str | None, **options: Any) -> None:
        if not dry_run:  # partitioned models' partitions premade ahead, as the hourly task does
            for made in maintain_all(self._models(model)):
                if made.created:
                    self.stdout.write(f"{made.table}: created {', '.join(made.created)}")
        for chosen in self._models(model):
            label = chosen._meta.label
            if dry_run:
                self.stdout.write(f"{label}: would delete {count_purgeable(chosen)}")
                continue
            result = purge_model(chosen)
            if has_history(chosen):
                result.entries += purge_orphans(chosen).entries
            entries = f", {result.entries} history entries" if result.entries else ""
            whole = f", {result.partitions} partitions dropped" if result.partitions else ""
            self.stdout.write(
                f"{label}: deleted {result.deleted} of {result.examined} rows"
                f" ({result.batches} batches){entries}{whole}"
            )

    def _models(self, label: str | None) -> list[type[Model]]:
        if label is None:
            return purged_models()
        try:
            return [get_scheduled_model(label)]
        except LookupError as exc:
            raise CommandError(str(exc)) from None
