import signal
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduling.delivery.checks import configuration_errors
from scheduling.delivery.sweep.daemon import Daemon
from scheduling.delivery.sweep.results import SweepResult
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.conf import scheduling_settings
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.registry import get_scheduled_model, scheduled_models
from scheduling.rows.setting_names import log_unknown_settings


class Command(BaseCommand):
    help = (
        "Deliver due scheduled rows: once until drained, or forever with --loop (every model and"
        " slot whose lock it gets, and the hourly purge: beat is then not needed; run it on as"
        " many hosts as you like)."
    )
    # A bad setting is refused in one line (handle()) before Django's own report of the rest.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("labels", nargs="*", help="app_label.ModelName (default: every model)")
        parser.add_argument("--loop", action="store_true", help="keep sweeping every interval")
        parser.add_argument(
            "--slot",
            type=int,
            default=None,
            help="sweeper slot (lock) to use (default: 0; with --loop, every slot in turn)",
        )

    def handle(
        self, *args: Any, labels: list[str], loop: bool, slot: int | None, **options: Any
    ) -> None:
        self._refuse_to_start(skip_checks=options.get("skip_checks", False))
        models = self._models(labels)
        self.stopping = False
        if not loop:
            for model in models:
                self._report(drain(model, slot=slot or 0))
            return
        log_unknown_settings()
        conf = scheduling_settings()
        slots = [slot] if slot is not None else list(range(conf.sweeper_slots))
        daemon = Daemon(models, slots, report=self._report)
        signal.signal(signal.SIGTERM, self._stop)
        while not self.stopping:
            started = time.monotonic()
            daemon.tick()
            # The interval runs from one tick's start to the next: a tick that spent its time
            # budget on a backlog is followed at once (a whole interval's sleep after each held
            # a rate-limited drain to 10/11 of its limit).
            time.sleep(max(0.0, conf.sweep_interval - (time.monotonic() - started)))

    def _refuse_to_start(self, *, skip_checks: bool) -> None:
        errors = configuration_errors()
        if errors:
            raise CommandError("\n".join(error.msg for error in errors))
        if not skip_checks:  # call_command() skips them, as for any command
            self.check()

    def _models(self, labels: list[str]) -> list[type[ScheduledEvent]]:
        try:
            return [get_scheduled_model(label) for label in labels] or scheduled_models()
        except LookupError as exc:
            raise CommandError(str(exc)) from None

    def _stop(self, signum: int, frame: object) -> None:
        self.stopping = True

    def _report(self, result: SweepResult) -> None:
        line = (
            f"{result.model}: delivered={result.delivered} expired={result.expired} "
            f"failed={result.failed} retrying={result.retrying} batches={result.batches}"
        )
        if result.paused:
            line += " (paused: manage.py scheduling_resume resumes it)"
        if result.locked_out:
            line += " (locked out: another sweeper holds this slot)"
        if result.error:
            line += f" error={result.error}"
        self.stdout.write(line)


def drain(model: type[ScheduledEvent], *, slot: int) -> SweepResult:
    total = SweepResult(model=model._meta.label)
    while True:
        result = sweep(model, slot=slot)
        for name in ("delivered", "expired", "failed", "retrying", "batches"):
            setattr(total, name, getattr(total, name) + getattr(result, name))
        total.locked_out, total.error = result.locked_out, result.error
        total.paused = result.paused
        if result.drained or result.locked_out or result.paused or result.error:
            return total
