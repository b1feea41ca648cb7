"""Retention: when a scheduled row is done, and from when its retention counts (the rules in
scheduling/rows/purge.py's docstring). The purge and the dropping of whole partitions share
these conditions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import DEFAULT_DB_ALIAS
from django.db.models import Model

from scheduling.rows.clock import database_now
from scheduling.rows.conf import scheduling_settings
from scheduling.rows.databases import connection_of
from scheduling.rows.extensions import extensions
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.states import Status


@dataclass(frozen=True)
class Cutoffs:
    done_before: datetime  # handled, delivered (no handler), cancelled before this: deleted
    failed_before: datetime  # failed or expired before this: deleted


def cutoffs(now: datetime | None = None, using: str = DEFAULT_DB_ALIAS) -> Cutoffs:
    """One clock read per purge, the database's (`now` overrides it, for tests)."""
    conf = scheduling_settings()
    now = now if now is not None else database_now(using)
    return Cutoffs(
        done_before=now - timedelta(days=conf.keep_done_days),
        failed_before=now - timedelta(days=conf.keep_failed_days),
    )


def done_condition(model: type[Model], *, kept_too: bool = True) -> str:
    """SQL over the alias `t`: the row is done and past its retention (and not kept)."""
    if not issubclass(model, ScheduledEvent):
        return extensions.purged[model._meta.label](model)
    finished = "t.handled_at" if model.get_awaits_handling() else "t.delivered_at"
    # updated_at stands in for a cancelled row written without cancelled_at (an import, raw
    # SQL): every cancel of the framework sets both, and such a row must not stay forever.
    condition = (
        f"(t.status = '{Status.CANCELLED.value}'"
        " AND COALESCE(t.cancelled_at, t.updated_at) < %(done_before)s"
        f" OR t.status = '{Status.DELIVERED.value}' AND {finished} < %(done_before)s"
        f" OR t.status IN ('{Status.FAILED.value}', '{Status.EXPIRED.value}')"
        " AND t.updated_at < %(failed_before)s)"
    )
    kept = extensions.kept.get(model._meta.label) if kept_too else None
    return condition if kept is None else f"{condition} AND NOT ({kept(model)})"


def older_than_done_retention(model: type[Model]) -> str:
    """A record last written longer ago than SCHEDULING_KEEP_DONE_DAYS: a purge rule for
    `extensions.also_purge()`, e.g. for records a handler writes."""
    return "t.updated_at < %(done_before)s"


def cutoff_params(limits: Cutoffs, model: type[Model]) -> dict[str, Any]:
    adapt = connection_of(model).ops.adapt_datetimefield_value
    return {"done_before": adapt(limits.done_before), "failed_before": adapt(limits.failed_before)}
