from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser
from redis.exceptions import RedisError

from scheduling.delivery.ratelimit import UNLIMITED, current_limit, override_of, set_override
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.registry import get_scheduled_model, scheduled_models


class Command(BaseCommand):
    help = (
        "Show each model's publishing rate limit, or change one for every sweeper of every host "
        "at its next sweep, without a restart: a rate (500/s, 10/m), 'none' (unlimited), or "
        "--clear (back to SCHEDULING_RATE_LIMITS and the model's rate_limit)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("label", nargs="?", help="app_label.ModelName (default: every model)")
        parser.add_argument("rate", nargs="?", help="N/s, N/m, N/h, N/d, or 'none'")
        parser.add_argument("--clear", action="store_true", help="remove the override")

    def handle(
        self, *args: Any, label: str | None, rate: str | None, clear: bool, **options: Any
    ) -> None:
        models = [self._model(label)] if label is not None else scheduled_models()
        if rate is not None or clear:
            if label is None or (rate is None) == (not clear):
                raise CommandError("give a model and either a rate or --clear")
            self._override(models[0], None if clear else rate)
        for model in models:
            self.stdout.write(self._line(model))

    def _model(self, label: str) -> type[ScheduledEvent]:
        if not label.strip():
            known = ", ".join(model._meta.label for model in scheduled_models())
            raise CommandError(f"the label is empty; give one of: {known}")
        try:
            return get_scheduled_model(label)
        except LookupError as exc:
            raise CommandError(str(exc)) from None

    def _override(self, model: type[ScheduledEvent], rate: str | None) -> None:
        value = UNLIMITED if rate is not None and rate.strip().lower() == UNLIMITED else rate
        try:
            set_override(model, value)
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc).replace("rate=", "the rate ")) from None
        except RedisError as exc:
            raise CommandError(f"could not set the override: {exc}") from None

    def _line(self, model: type[ScheduledEvent]) -> str:
        limit = current_limit(model)
        source = "override" if override_of(model) is not None else "configured"
        pace = "unlimited" if limit is None else f"{limit:g}/s"
        return f"{model._meta.label}: {pace} ({source})"
