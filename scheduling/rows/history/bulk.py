"""A bulk change of scheduled rows and its history entries, together.

On PostgreSQL one statement: the selected rows are locked (`chosen`), updated (`changed`), and
an entry a changed row is inserted, each with the due time before and after. The UPDATE's SET
list is the ORM's own compilation of the change, so both paths apply the same expressions.
Elsewhere (the embedded SQLite mode) the same happens in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import orjson
from django.core.exceptions import EmptyResultSet
from django.db import connections, models, transaction
from django.db.models.sql.subqueries import UpdateQuery
from django.utils import timezone

from scheduling.rows.actors import current_actor
from scheduling.rows.databases import write_db
from scheduling.rows.history.models import EventHistory, Kind
from scheduling.rows.tracing import context as tracing


@dataclass(frozen=True)
class Change:
    kind: Kind
    values: dict[str, Any]  # as for QuerySet.update()
    detail: dict[str, Any] = field(default_factory=dict)  # the same for every row


def moved(how: str, **values: Any) -> Change:
    return Change(Kind.RESCHEDULED, values, {"how": how})


# Per-row detail over `chosen` (the row before) and `changed` (after), by kind.
ROW_DETAIL = {
    Kind.RESCHEDULED: "jsonb_build_object('before', chosen.old_due, 'after', changed.due_at)",
    Kind.RETRIED: (
        "jsonb_build_object('from', chosen.old_status,"
        " 'business_due_at', COALESCE(changed.business_due_at, chosen.old_due),"
        " 'late_by_seconds', round(extract(epoch FROM statement_timestamp()"
        " - COALESCE(changed.business_due_at, chosen.old_due))::numeric, 3))"
    ),
}

# A change that cancels some of its rows (a training moved so that a reminder would be in the
# past) records those as cancelled, with their reason.
NEWLY_CANCELLED = "changed.status = 'cancelled' AND chosen.old_status <> 'cancelled'"

CHANGE_WITH_HISTORY = """
WITH chosen(id, old_due, old_status) AS ({chosen}),
changed AS (
    {update} {match}
    RETURNING {pk} AS id, attempts, version, due_at, business_due_at, status, cancel_reason
)
INSERT INTO {history} (model, row_id, at, kind, attempt, version, actor, detail)
SELECT %s, changed.id, statement_timestamp(),
       CASE WHEN {newly_cancelled} THEN 'cancelled' ELSE %s END,
       changed.attempts, changed.version, %s,
       %s::jsonb || {row_detail} || CASE WHEN {newly_cancelled}
           THEN jsonb_build_object('reason', changed.cancel_reason) ELSE '{{}}'::jsonb END
FROM changed JOIN chosen ON chosen.id = changed.id
"""
RETURNING_ROWS = "RETURNING row_id"

# By id: a row another transaction changed while `chosen` waited for its lock is found again in
# its new version (PostgreSQL re-checks the WHERE on it), wherever its due time went.
BY_ID = "WHERE {pk} = ANY(ARRAY(SELECT id FROM chosen))"
# By (id, due time), for rows the transaction holds already (claimed): none can have moved, and
# on a table partitioned by due time the join probes each row's partition only (pruned as it
# runs), where an id probes every partition's index.
BY_ID_AND_DUE_TIME = "FROM chosen WHERE {pk} = chosen.id AND {due} = chosen.old_due"


def apply(rows: models.QuerySet[Any], change: Change, *, held: bool = False) -> int:
    """Apply `change` to `rows` (already narrowed to the rows it may touch); the count.
    `held`: the transaction has locked these rows already (the sweep's claimed batch)."""
    count: int = _apply(rows, change, returning=False, held=held)
    return count


def changed_rows(rows: models.QuerySet[Any], change: Change) -> list[Any]:
    """apply(), returning the pks of the rows it changed."""
    changed: list[Any] = _apply(rows, change, returning=True)
    return changed


def _apply(
    rows: models.QuerySet[Any], change: Change, *, returning: bool, held: bool = False
) -> Any:
    change = traced(change)
    # One statement needs no savepoint of its own; a transaction, for FOR UPDATE.
    with transaction.atomic(using=write_db(rows), savepoint=False):
        if connections[write_db(rows)].vendor == "postgresql":
            result = _apply_in_one_statement(rows, change, returning=returning, held=held)
        else:
            changed = _apply_in_steps(rows, change)
            result = changed if returning else len(changed)
    tracing.note_change(rows.model, change.kind, len(result) if returning else result)
    return result


def traced(change: Change) -> Change:
    """The change with the current trace id in its entries' detail, where a span records."""
    trace_id = tracing.current_trace_id()
    return replace(change, detail={**change.detail, "trace_id": trace_id}) if trace_id else change


def _apply_in_one_statement(
    rows: models.QuerySet[Any], change: Change, *, returning: bool, held: bool
) -> Any:
    using = write_db(rows)
    connection = connections[using]
    quote = connection.ops.quote_name
    model = rows.model
    if not rows.query.is_sliced:
        rows = rows.order_by()  # the selection's order would only cost a sort
    chosen = rows.select_for_update(of=("self",)).values_list("pk", "due_at", "status")
    try:
        chosen_sql, chosen_params = chosen.query.get_compiler(using=using).as_sql()
    except EmptyResultSet:  # e.g. pk__in=[]: nothing can change
        return [] if returning else 0
    update_sql, update_params = _update_sql(model, change.values, using)
    table = quote(model._meta.db_table)
    pk = f"{table}.{quote(model._meta.pk.column)}"
    match = BY_ID_AND_DUE_TIME if held else BY_ID
    sql = CHANGE_WITH_HISTORY.format(
        chosen=chosen_sql,
        update=update_sql,
        match=match.format(pk=pk, due=f"{table}.{quote('due_at')}"),
        pk=pk,
        history=quote(EventHistory._meta.db_table),
        row_detail=ROW_DETAIL.get(change.kind, "'{}'::jsonb"),
        newly_cancelled=NEWLY_CANCELLED,
    )
    entry = [model._meta.label_lower, change.kind.value, current_actor()]
    params = [*chosen_params, *update_params, *entry, orjson.dumps(change.detail).decode()]
    if returning:
        sql += RETURNING_ROWS
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [row_id for (row_id,) in cursor.fetchall()] if returning else cursor.rowcount


def _update_sql(model: type[models.Model], values: dict[str, Any], using: str) -> tuple[str, Any]:
    query = UpdateQuery(model)
    query.add_update_values(values)
    return query.get_compiler(using=using).as_sql()


def _apply_in_steps(rows: models.QuerySet[Any], change: Change) -> list[Any]:
    before = {
        pk: (due_at, status)
        for pk, due_at, status in rows.select_for_update().values_list("pk", "due_at", "status")
    }
    manager = rows.model._default_manager.using(write_db(rows))
    manager.filter(pk__in=list(before)).update(**change.values)
    after = manager.filter(pk__in=list(before)).values_list(
        "pk", "attempts", "version", "due_at", "business_due_at", "status", "cancel_reason"
    )
    entries = [_entry(rows.model, change, before[row[0]], *row) for row in after]
    EventHistory.objects.using(write_db(rows)).bulk_create(entries)
    return list(before)


def _entry(
    model: type[models.Model], change: Change, before: tuple[Any, str], *row: Any
) -> EventHistory:
    pk, attempts, version, due_at, business_due_at, status, cancel_reason = row
    old_due, old_status = before
    detail = dict(change.detail)
    kind = change.kind
    if status == "cancelled" and old_status != "cancelled":
        kind = Kind.CANCELLED
        detail["reason"] = cancel_reason
    if change.kind == Kind.RESCHEDULED:
        detail.update(before=old_due.isoformat(), after=due_at.isoformat())
    elif change.kind == Kind.RETRIED:
        business = business_due_at or old_due
        late_by = (timezone.now() - business).total_seconds()
        detail.update(
            {
                "from": old_status,
                "business_due_at": business.isoformat(),
                "late_by_seconds": late_by,
            }
        )
    return EventHistory(
        model=model._meta.label_lower,
        row_id=pk,
        at=timezone.now(),
        kind=kind,
        attempt=attempts,
        version=version,
        actor=current_actor(),
        detail=detail,
    )
