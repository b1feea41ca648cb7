from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduling.rows.due_partitions import parse_interval
from scheduling.rows.partitions import (
    convert,
    is_partitioned,
    maintain,
    partitioning_of,
    partitions,
)
from scheduling.rows.registry import get_scheduled_model, scheduled_models


class Command(BaseCommand):
    help = (
        "Range partitions of scheduled tables on due_at (docs/partitioning.md). convert: "
        "partition a model's table, rows kept, online; maintain: premake partitions ahead; "
        "status: each partitioned model's partitions."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["convert", "maintain", "status"])
        parser.add_argument("model", nargs="?", help="app_label.ModelName (convert: required)")
        parser.add_argument("--interval", help='"<N>d" or "<N>h" (convert; default: declared, 1d)')

    def handle(self, *args: Any, action: str, model: str | None, **options: Any) -> None:
        interval = options["interval"]
        if interval is not None:
            try:
                parse_interval(interval)
            except Exception as exc:
                raise CommandError(f"--interval: {exc}") from None
        if action == "convert":
            self.convert(model, interval)
        elif action == "maintain":
            for chosen in self.models(model):
                made = maintain(chosen)
                self.stdout.write(
                    f"{chosen._meta.label}: created {len(made.created)} partitions"
                    f", moved {made.moved} rows from the default partition"
                )
        else:
            for chosen in self.models(model):
                self.status(chosen)

    def convert(self, label: str | None, interval: str | None) -> None:
        if label is None:
            raise CommandError("convert needs a model: app_label.ModelName")
        chosen = self.model(label)
        if is_partitioned(chosen):
            self.stdout.write(f"{chosen._meta.label}: already partitioned")
            return
        done = convert(chosen, interval)
        for step, seconds in done.steps:
            self.stdout.write(f"  {step}: {seconds:.3f} s")
        dropped = ", ".join(done.dropped) or "none"
        self.stdout.write(
            f"{chosen._meta.label}: partitioned; {done.rows} rows kept in {done.table}_before"
            f" (due before {done.bound}); unique indexes without due_at dropped: {dropped}"
        )

    def status(self, chosen: Any) -> None:
        found = partitions(chosen)
        if not found:
            declared = " (declared partitioned: run convert)" if partitioning_of(chosen) else ""
            self.stdout.write(f"{chosen._meta.label}: not partitioned{declared}")
            return
        self.stdout.write(f"{chosen._meta.label}:")
        for each in found:
            bounds = "DEFAULT" if each.default else f"[{each.lower or 'MINVALUE'}, {each.upper})"
            rows = "?" if each.rows < 0 else str(each.rows)
            self.stdout.write(f"  {each.name}  {bounds}  ~{rows} rows  {each.bytes} bytes")

    def models(self, label: str | None) -> list[Any]:
        if label is not None:
            return [self.model(label)]
        return [model for model in scheduled_models() if is_partitioned(model)]

    def model(self, label: str) -> Any:
        try:
            return get_scheduled_model(label)
        except LookupError as exc:
            raise CommandError(str(exc)) from None
