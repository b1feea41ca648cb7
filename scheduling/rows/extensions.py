"""What optional apps and hosts plug into the core, registered from their `AppConfig.ready()`:

    from scheduling import extensions

    class ShopConfig(AppConfig):
        def ready(self) -> None:
            from scheduling import older_than_done_retention

            extensions.also_purge(self.get_model("Receipt"), older_than_done_retention)
            extensions.add_route("receipts", "shop.api.ReceiptViewSet", basename="receipt")

The core reads it: the purge (`scheduling.rows.purge`), the REST router (`scheduling.ops.api.urls`)
and the model lookup of a published message (`scheduling.rows.registry`). Registering the same
thing twice is a no-op (`ready()` may run more than once in tests); registering something else
under a name already taken raises ImproperlyConfigured. docs/extending.md has the details.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from django.core.exceptions import ImproperlyConfigured
from django.db.models import Model

if TYPE_CHECKING:
    from scheduling.rows.models import ScheduledEvent

# SQL over the alias `t` (one row of the model's table), given the model. It may use the
# parameters %(done_before)s and %(failed_before)s: the retention cut-offs of this purge.
SqlCondition = Callable[[type[Model]], str]
KeepCondition = Callable[[type["ScheduledEvent"]], str]

Value = TypeVar("Value")


@dataclass(frozen=True)
class Route:
    prefix: str
    viewset: str | Callable[[], Any]  # a dotted path, or a callable returning the viewset
    basename: str


@dataclass
class Extensions:
    purged: dict[str, SqlCondition] = field(default_factory=dict)  # by model label
    kept: dict[str, KeepCondition] = field(default_factory=dict)  # by model label
    kept_in_partition: dict[str, KeepCondition] = field(default_factory=dict)  # by model label
    routes: dict[str, Route] = field(default_factory=dict)  # by prefix
    former_labels: dict[str, str] = field(default_factory=dict)  # lower-case, old to new

    @property
    def extensions(self) -> Extensions:
        """Itself: `from scheduling.extensions import extensions`, as 0.2.0's docs wrote it."""
        warnings.warn(
            "scheduling.extensions.extensions is deprecated: `from scheduling import extensions` "
            "is the registry.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self

    def also_purge(self, model: type[Model], condition: SqlCondition) -> None:
        """The hourly purge also walks `model` (not a scheduled one: those are purged already)
        and deletes its rows matching `condition`."""
        if is_scheduled(model):
            raise ImproperlyConfigured(
                f"{model._meta.label} is a scheduled model, purged already; use keep()"
            )
        claim(self.purged, model._meta.label, condition, "a purge rule")

    def keep(
        self,
        model: type[ScheduledEvent],
        condition: KeepCondition,
        *,
        in_partition: KeepCondition | None = None,
    ) -> None:
        """Rows of the scheduled `model` matching `condition` (SQL over the alias `t`) are kept
        however old. `in_partition`, for a model partitioned by due time: the same rule as one
        set-based statement, `SELECT EXISTS (...)` over the partition `{partition}` (whose rows
        are due before `%(upper)s`; the next partition's, from there to `%(next_upper)s`), true
        when a row of it is kept; without it, a partition's drop checks `condition` row by row."""
        if not is_scheduled(model):
            raise ImproperlyConfigured(f"{model._meta.label} is not a scheduled model")
        claim(self.kept, model._meta.label, condition, "a keep rule")
        if in_partition is not None:
            claim(self.kept_in_partition, model._meta.label, in_partition, "a keep rule")

    def add_route(self, prefix: str, viewset: str | Callable[[], Any], *, basename: str) -> None:
        """`scheduling.ops.api.urls` registers `viewset` at `prefix` on its router. A dotted path
        (or a callable) is resolved when the URLs are loaded, not at start-up."""
        claim(self.routes, prefix, Route(prefix, viewset, basename), "a route")

    def former_label(self, old: str, model: type[ScheduledEvent]) -> None:
        """A message published under `old` ("app_label.modelname") is for `model`."""
        claim(self.former_labels, old.lower(), model._meta.label_lower, "a former label")


def claim(registered: dict[str, Value], key: str, value: Value, what: str) -> None:
    if registered.setdefault(key, value) != value:
        raise ImproperlyConfigured(f"{key} has {what} registered already: {registered[key]!r}")


def is_scheduled(model: type[Model]) -> bool:
    # Imported here so that an apps.py may import this module before the models load.
    from scheduling.rows.models import ScheduledEvent

    return issubclass(model, ScheduledEvent)


extensions = Extensions()
