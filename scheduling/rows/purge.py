"""Retention: rows done for longer than their retention are deleted, in short batches.

A row is done, and its retention counts from:
- cancelled: `cancelled_at`;
- delivered, on a model whose handler runs handle_once: once handled, `handled_at`;
- delivered, on a model that ends at publishing (plain JSON, job runs, occurrences):
  `delivered_at`;
- failed or expired: `updated_at` (set when it became so), kept SCHEDULING_KEEP_FAILED_DAYS.
A pending row, or a delivered row still awaiting its handler, is never deleted.

No index covers these columns (one would cost every write), so a purge walks the primary key:
each batch is its own transaction over the next SCHEDULING_BATCH_SIZE rows by pk (counted, so
gaps left by earlier purges cost nothing), and deletes the done ones among them. A batch
examines and deletes at most that many rows whatever the table's size; a sweep or a handler
never waits for it (SKIP LOCKED), nor it for them. Measured against window sizes, walking the
done rows themselves and one DELETE (docs/benchmarks.md, "Retention"). A partitioned table
first loses its wholly done partitions (scheduling.rows.partitions).

A row's history (`EventHistory`) and its creation context (tracing) go with it, in its batch's
transaction (on PostgreSQL in the DELETE's own statement). A row deleted otherwise (its domain entity's CASCADE, a raw
DELETE) leaves its entries behind: once a scheduled model's walk reaches its table's end, a
second one walks its entries by the (model, row_id, at) index, SCHEDULING_BATCH_SIZE entries a
batch, deleting those whose row is gone (rows off the happy path only: a short walk).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from django.apps import apps
from django.core.cache import cache
from django.db import transaction
from django.db.models import Model, signals

from scheduling.rows.conf import scheduling_settings
from scheduling.rows.databases import RELAXED_COMMIT, connection_of, database_of
from scheduling.rows.extensions import extensions
from scheduling.rows.history.models import EventHistory
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.partitions import drop_purgeable
from scheduling.rows.registry import scheduled_models
from scheduling.rows.retention import Cutoffs, cutoff_params, cutoffs, done_condition
from scheduling.rows.retention import (  # the path the docs gave, for a release
    older_than_done_retention as older_than_done_retention,
)
from scheduling.rows.tracing.models import CreationContext

log = logging.getLogger(__name__)

# Seconds the hourly task keeps starting batches. It holds a worker slot of the sweeps' queue
# meanwhile, so it stays well under SCHEDULING_HEALTH_MAX_LATENESS: on a one-process worker the
# sweeps wait for it. The next run resumes where it stopped. Enough to examine millions of rows
# an hour (docs/benchmarks.md, "Retention", has the rate).
PURGE_TIME_BUDGET = 30.0
RESUME_TTL = 7 * 24 * 3600  # seconds a resume point is kept in the cache
ORPHANS = ":orphans"  # the resume key's suffix for the walk of a model's orphaned entries


@dataclass
class PurgeResult:
    model: str
    deleted: int = 0
    examined: int = 0
    batches: int = 0
    resume_after: Any = None  # the last pk examined when the time ran out; None: walked it all
    entries: int = 0  # history entries deleted: the deleted rows', and orphans'
    partitions: int = 0  # whole partitions dropped (their rows are counted in `deleted`)


class Batch(NamedTuple):
    deleted: int
    examined: int
    after: Any  # the last pk this batch examined; None once the table's end was reached
    entries: int = 0


def purged_models() -> list[type[Model]]:
    """Every scheduled model, then those registered with `extensions.also_purge()` that are
    installed, in the order a purge walks them."""
    installed = {model._meta.label: model for model in apps.get_models()}
    others = [installed[label] for label in extensions.purged if label in installed]
    return [*scheduled_models(), *others]


def purge_batch(model: type[Model], *, after: Any, span: int, limits: Cutoffs) -> Batch:
    """One transaction: the next `span` rows by pk after `after` (None: from the first); the
    done ones nobody holds are deleted."""
    with transaction.atomic(using=database_of(model)), connection_of(model).cursor() as cursor:
        relax_commit(cursor)
        table, pk = quoted(model)
        end, examined = window_end(cursor, table, pk, after=after, span=span)
        if end is None:
            return Batch(0, 0, None)
        params = {**cutoff_params(limits, model), "after": after, "end": end}
        params["label"] = model._meta.label_lower
        deleted, entries = delete_done(cursor, model, params, bounded_below=after is not None)
        return Batch(deleted, examined, end if examined == span else None, entries)


def relax_commit(cursor: Any) -> None:
    # A commit lost in a crash only leaves its rows for the next purge (no WAL flush a batch);
    # jit off as in the sweep (queries.py): on a partitioned table it compiled every batch.
    if cursor.db.vendor == "postgresql":
        cursor.execute(RELAXED_COMMIT)


def window_end(
    cursor: Any,
    table: str,
    key: str,
    *,
    after: Any,
    span: int,
    scope: str | None = None,
    params: dict[str, Any] | None = None,
) -> tuple[Any, int]:
    """(the last of the next `span` keys, how many there are): a walk of `key`'s index over
    the rows of `table` in `scope` (default: those after `after`)."""
    if scope is None:
        scope = f"{key} > %(after)s" if after is not None else "TRUE"
    cursor.execute(
        f"SELECT max(key), count(*) FROM (SELECT {key} AS key FROM {table}"
        f" WHERE {scope} ORDER BY {key} LIMIT %(span)s) AS window_rows",
        {**(params or {}), "after": after, "span": span},
    )
    return tuple(cursor.fetchone())


def delete_done(
    cursor: Any, model: type[Model], params: dict[str, Any], *, bounded_below: bool
) -> tuple[int, int]:
    """Deletes the window's done rows and their history: (rows deleted, entries deleted)."""
    rows = done_rows_sql(model, bounded_below=bounded_below)
    if not plain_delete(model):
        cursor.execute(rows, params)
        pks = [pk for (pk,) in cursor.fetchall()]
        deleted = model._base_manager.filter(pk__in=pks).delete()[1].get(model._meta.label, 0)
        return deleted, delete_entries(model, pks)
    table, pk = quoted(model)
    postgresql = connection_of(model).vendor == "postgresql"
    # = ANY(ARRAY(...)) pins the delete to the pk index; SQLite has neither.
    delete = f"DELETE FROM {table} WHERE {pk} " + (
        f"= ANY(ARRAY({rows}))" if postgresql else f"IN ({rows})"
    )
    if not has_history(model):
        cursor.execute(delete, params)
        return int(cursor.rowcount), 0
    if postgresql:
        return delete_with_entries(cursor, f"{delete} RETURNING {pk} AS pk", params)
    # The embedded mode (SQLite): the entries' DELETE takes the one writer's lock first, so
    # which rows are done cannot change before the rows' DELETE.
    cursor.execute(
        f"DELETE FROM {history_table(cursor.db)} WHERE model = %(label)s AND row_id IN ({rows})",
        params,
    )
    entries = int(cursor.rowcount)
    cursor.execute(delete, params)
    return int(cursor.rowcount), entries


def delete_with_entries(cursor: Any, gone: str, params: dict[str, Any]) -> tuple[int, int]:
    """PostgreSQL: one statement deletes the rows (`gone`, returning their pks) and their
    entries."""
    cursor.execute(
        f"WITH gone AS ({gone}), entries AS (DELETE FROM {history_table(cursor.db)}"
        " WHERE model = %(label)s AND row_id = ANY(ARRAY(SELECT pk FROM gone)) RETURNING 1),"
        f" contexts AS (DELETE FROM {contexts_table(cursor.db)}"
        " WHERE model = %(label)s AND row_id = ANY(ARRAY(SELECT pk FROM gone)))"
        " SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM entries)",
        params,
    )
    deleted, entries = cursor.fetchone()
    return int(deleted), int(entries)


def delete_entries(model: type[Model], pks: list[Any]) -> int:
    if not has_history(model) or not pks:
        return 0
    using, label = database_of(model), model._meta.label_lower
    CreationContext.objects.using(using).filter(model=label, row_id__in=pks).delete()
    history = EventHistory.objects.using(using)
    return history.filter(model=label, row_id__in=pks).delete()[0]


def done_rows_sql(model: type[Model], *, bounded_below: bool) -> str:
    """The pks of the window's done rows, locked (PostgreSQL)."""
    table, pk = quoted(model)
    lower = f"t.{pk} > %(after)s AND " if bounded_below else ""
    rows = (
        f"SELECT t.{pk} FROM {table} AS t"
        f" WHERE {lower}t.{pk} <= %(end)s AND {done_condition(model)}"
    )
    if connection_of(model).vendor != "postgresql":  # embedded (SQLite): one writer at a time
        return rows
    # SKIP LOCKED: a row a handler, a retry or an admin action holds is theirs; the next purge
    # sees it. Locking re-reads a row changed since the statement began, so one retried into
    # pending meanwhile no longer matches.
    return f"{rows} FOR UPDATE OF t SKIP LOCKED"


def plain_delete(model: type[Model]) -> bool:
    """No table points to these rows and nobody listens for their deletion; otherwise the ORM
    deletes them, applying each foreign key's on_delete and sending the signals, which one
    DELETE statement would break (an IntegrityError) or skip."""
    return not model._meta.related_objects and not any(
        signal.has_listeners(model) for signal in (signals.pre_delete, signals.post_delete)
    )


def has_history(model: type[Model]) -> bool:
    return issubclass(model, ScheduledEvent)  # EventHistory names its rows by label_lower


def history_table(db: Any) -> str:  # on the model's database, with its rows
    return str(db.ops.quote_name(EventHistory._meta.db_table))


def contexts_table(db: Any) -> str:  # the rows' creation contexts (tracing), there too
    return str(db.ops.quote_name(CreationContext._meta.db_table))


def quoted(model: type[Model]) -> tuple[str, str]:
    quote = connection_of(model).ops.quote_name
    return quote(model._meta.db_table), quote(model._meta.pk.column)


def purge_model(
    model: type[Model],
    *,
    now: datetime | None = None,
    after: Any = None,
    deadline: float | None = None,
) -> PurgeResult:
    """Walk the model's table from `after` (None: its first row) to its end, or until the
    monotonic `deadline`."""
    limits, span = cutoffs(now, database_of(model)), scheduling_settings().batch_size
    dropped = drop_purgeable(model, limits)  # partitions of done rows go whole, first
    return walk(
        PurgeResult(model._meta.label, dropped.rows, partitions=len(dropped.partitions)),
        lambda after: purge_batch(model, after=after, span=span, limits=limits),
        after=after,
        deadline=deadline,
    )


def purge_orphans(
    model: type[Model], *, after: Any = None, deadline: float | None = None
) -> PurgeResult:
    """Walk the row ids the model's history names from `after`, deleting the entries of rows
    that no longer exist."""
    span = scheduling_settings().batch_size
    return walk(
        PurgeResult(model=model._meta.label),
        lambda after: orphan_batch(model, after=after, span=span),
        after=after,
        deadline=deadline,
    )


def walk(
    result: PurgeResult, batch: Callable[[Any], Batch], *, after: Any, deadline: float | None
) -> PurgeResult:
    """`batch` after batch from `after` to the end, or until the monotonic `deadline`."""
    while True:
        done = batch(after)
        result.deleted += done.deleted
        result.entries += done.entries
        result.examined += done.examined
        result.batches += bool(done.examined)
        after = done.after
        if after is None:
            return result
        if deadline is not None and time.monotonic() >= deadline:
            result.resume_after = after
            return result


def orphan_batch(model: type[Model], *, after: Any, span: int) -> Batch:
    """One transaction: the next `span` row ids the model's history names after `after`; the
    entries of those whose row is gone are deleted."""
    history, (table, pk) = history_table(connection_of(model)), quoted(model)
    with transaction.atomic(using=database_of(model)), connection_of(model).cursor() as cursor:
        relax_commit(cursor)
        scope = "model = %(label)s" + (" AND row_id > %(after)s" if after is not None else "")
        params = {"label": model._meta.label_lower, "after": after}
        end, examined = window_end(
            cursor, history, "row_id", after=after, span=span, scope=scope, params=params
        )
        if end is None:
            return Batch(0, 0, None)
        cursor.execute(
            f"DELETE FROM {history} WHERE {scope} AND row_id <= %(end)s"
            f" AND NOT EXISTS (SELECT 1 FROM {table} AS t WHERE t.{pk} = {history}.row_id)",
            {**params, "end": end},
        )
        return Batch(0, examined, end if examined == span else None, int(cursor.rowcount))


def count_purgeable(model: type[Model], *, now: datetime | None = None) -> int:
    """What purge_model would delete now (rows someone holds included)."""
    table, _ = quoted(model)
    with connection_of(model).cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {table} AS t WHERE {done_condition(model)}",
            cutoff_params(cutoffs(now, database_of(model)), model),
        )
        return int(cursor.fetchone()[0])


def purge_all(
    *,
    time_budget: float = PURGE_TIME_BUDGET,
    models: Sequence[type[Model]] | None = None,
) -> list[PurgeResult]:
    """Every purged model (or `models`) in turn within `time_budget` seconds; a walk the
    budget cut short resumes at its next run from where it stopped."""
    deadline = time.monotonic() + time_budget
    results: list[PurgeResult] = []
    for model in purged_models() if models is None else models:
        if results and time.monotonic() >= deadline:
            break  # the first model gets one batch at least, so a short budget still advances
        results.append(purge_resuming(model, deadline))
    return results


def purge_resuming(model: type[Model], deadline: float) -> PurgeResult:
    """The model's walk from where the last run stopped; once at its table's end, the walk of
    its history's orphans from where that one stopped."""
    result = purge_model(model, after=resume_point(model), deadline=deadline)
    remember(model, result.resume_after)
    if result.resume_after is None and has_history(model) and time.monotonic() < deadline:
        orphans = purge_orphans(model, after=resume_point(model, ORPHANS), deadline=deadline)
        remember(model, orphans.resume_after, ORPHANS)
        result.entries += orphans.entries
    if result.deleted or result.entries:
        log.info(
            "purged %d rows of %s, %d history entries", result.deleted, result.model, result.entries
        )
    return result


def resume_key(model: type[Model], walk: str = "") -> str:
    return f"scheduling:purge:{model._meta.label_lower}{walk}"


def resume_point(model: type[Model], walk: str = "") -> Any:
    try:
        return cache.get(resume_key(model, walk))
    except Exception as exc:  # only a shortcut: without it the walk starts from the first row
        log.warning("purge of %s starts from its first row: %s", model._meta.label, exc)
        return None


def remember(model: type[Model], after: Any, walk: str = "") -> None:
    try:
        if after is None:
            cache.delete(resume_key(model, walk))
        else:
            cache.set(resume_key(model, walk), after, RESUME_TTL)
    except Exception as exc:
        log.warning("purge of %s could not keep its resume point: %s", model._meta.label, exc)
