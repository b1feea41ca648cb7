"""History entries written one row at a time: by the worker when a handling fails, by the sweep
when it expires a row or cannot publish it. Each is written in the transaction of its change."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.apps import apps
from django.db import models
from django.db.models.functions import Now

from scheduling.rows.actors import current_actor, process_actor
from scheduling.rows.databases import database_of
from scheduling.rows.history.models import EventHistory, Kind
from scheduling.rows.tracing import context as tracing


def entry(
    row: Any,
    kind: Kind,
    *,
    at: datetime | None = None,
    attempt: int | None = None,
    actor: str | None = None,
    detail: dict[str, Any] | None = None,
) -> EventHistory:
    """An entry for `row` (a ScheduledEvent); `at` defaults to the database's clock."""
    return EventHistory(
        model=row._meta.label_lower,
        row_id=row.pk,
        at=at if at is not None else Now(),
        kind=kind,
        attempt=row.attempts if attempt is None else attempt,
        version=row.version,
        actor=actor if actor is not None else current_actor(),
        detail=with_trace_id(detail or {}),
    )


def with_trace_id(detail: dict[str, Any]) -> dict[str, Any]:
    """`detail`, and the current trace id where a span records (the admin links it)."""
    trace_id = tracing.current_trace_id()
    return {**detail, "trace_id": trace_id} if trace_id else detail


def write(entries: Iterable[EventHistory], *, using: str | None = None) -> None:
    """Written on `using`, else on the database of the entries' scheduled model: in the
    transaction of the row's change, which is there."""
    entries = list(entries)
    if entries:
        using = using or database_of(apps.get_model(entries[0].model))
        EventHistory.objects.using(using).bulk_create(entries)


def late_by(at: datetime, business_time: datetime) -> float:
    return round((at - business_time).total_seconds(), 3)


def handling_failed(
    row: Any, exc: BaseException, *, out_of_tries: bool, retry_at: datetime | None
) -> list[EventHistory]:
    """The try that failed: its publication (the row's columns are about to forget it), the
    failure, and, out of tries, the row's end."""
    entries = publication(row)
    worker = process_actor("worker")
    failure = {"error_type": type(exc).__name__, "error": str(exc)[:2000]}
    if retry_at is not None:
        failure["retry_at"] = retry_at.isoformat()
    entries.append(entry(row, Kind.HANDLING_FAILED, actor=worker, detail=failure))
    if out_of_tries:
        entries.append(entry(row, Kind.FAILED, actor=worker, detail={"reason": "out of tries"}))
    return entries


def publication(row: Any) -> list[EventHistory]:
    """The row's last publication, if it was published (its columns will forget it)."""
    return [] if row.delivered_at is None else [published(row)]


def published(row: Any) -> EventHistory:
    return entry(
        row,
        Kind.PUBLISHED,
        at=row.delivered_at,
        actor="sweep",
        detail={"late_by_seconds": late_by(row.delivered_at, row.business_time)},
    )


def expired(rows: Iterable[Any], *, now: datetime) -> list[EventHistory]:
    sweeper = process_actor("sweep")
    return [
        entry(
            row,
            Kind.EXPIRED,
            actor=sweeper,
            detail={
                "due_at": row.due_at.isoformat(),
                "expires_at": _iso(row.expires_at()),
                "late_by_seconds": late_by(now, row.due_at),
            },
        )
        for row in rows
    ]


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def publish_failed(row: Any, error: str, *, failed: bool) -> EventHistory:
    kind = Kind.FAILED if failed else Kind.HANDLING_FAILED
    failure = {"stage": "publish", "error": error[:2000]}
    return entry(row, kind, actor=process_actor("sweep"), detail=failure)


def written_for(model: type[models.Model], pk: Any) -> models.QuerySet[EventHistory]:
    history = EventHistory.objects.using(database_of(model))
    return history.filter(model=model._meta.label_lower, row_id=pk)


def requeued(stale: list[Any], out_of_tries: list[Any], note: str) -> list[EventHistory]:
    """A requeued row's entries: the publication its columns are about to forget, and what
    became of it (redelivered, or failed out of tries)."""
    reconciler = process_actor("reconcile")
    entries = []
    for row in stale:
        kind = Kind.FAILED if row.pk in out_of_tries else Kind.REDELIVERED
        entries += [
            *publication(row),
            entry(row, kind, actor=reconciler, detail={"reason": note}),
        ]
    return entries


# requeued()'s entries, written by the reconcile's own statement over its `requeued` rows (id,
# status, attempts, version, delivered_at, business_time); late_by_seconds as late_by() rounds.
REQUEUED_SQL = """
        INSERT INTO {history} (model, row_id, at, kind, attempt, version, actor, detail)
        SELECT %(label)s, id, entry.at, entry.kind, attempts, version, entry.actor, entry.detail
        FROM requeued, LATERAL (VALUES
            (delivered_at, 'published', 'sweep', jsonb_build_object('late_by_seconds',
                round(extract(epoch FROM delivered_at - business_time)::numeric, 3))),
            (statement_timestamp(), CASE WHEN status = 'failed' THEN 'failed' ELSE 'redelivered' END,
                %(actor)s, jsonb_build_object('reason', %(note)s))
        ) AS entry(at, kind, actor, detail)
"""
