"""Quiet hours applied to a model's rows as they are created or moved, in the caller's
transaction, with their history: a row due in a quiet span is held to its end (`due_at` says
when it will really go, `business_due_at` keeps the time asked for), folded into one per
entity, or cancelled, as the model's `quiet_policy` says (scheduling.rows.quiet.hours).

A row its quiet hours would hold past its own expiry (`expires_at()`) is cancelled instead:
it would only expire at the span's end.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import reduce
from typing import Any

from django.db import models, transaction
from django.db.models import Case, F, Q, Value, When
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from scheduling.rows.history import bulk, record
from scheduling.rows.history.models import EventHistory, Kind
from scheduling.rows.quiet.hours import (
    QuietPolicy,
    fold_by_attnames,
    folded_reason,
    held_reason,
    in_own_zone,
    released_at,
    skipped_reason,
    spans_for,
)
from scheduling.rows.states import Status

HOW = "quiet hours"


@dataclass(frozen=True)
class QuietHold:
    until: datetime
    reason: str


@dataclass(frozen=True)
class Skip:
    reason: str


Decision = QuietHold | Skip


def has_quiet_hours(model: type[Any]) -> bool:
    return getattr(model, "quiet_hours", None) is not None


def decide(model: type[Any], row: Any, at: datetime) -> Decision | None:
    """What the model's quiet hours do to `row` if it is to be delivered at `at`."""
    spans = spans_for(model, row)
    released = None if spans is None else released_at(spans, at)
    if spans is None or released is None:
        return None
    # In UTC but in the reasons: aware times compare unequal across zones in a repeated hour.
    until, shown = released.astimezone(UTC), in_own_zone(spans, released)
    if model.quiet_policy == QuietPolicy.SKIP:
        return Skip(skipped_reason(shown))
    if _would_expire(row, until):
        return Skip(skipped_reason(shown, expires=True))
    return QuietHold(until, held_reason(shown))


def _would_expire(row: Any, until: datetime) -> bool:
    asked_for = row.due_at
    row.due_at = until  # expires_at() may count from the time the row is due
    try:
        expiry = row.expires_at()
    finally:
        row.due_at = asked_for
    return expiry is not None and expiry <= until


# --- on create ---------------------------------------------------------------------------


def create(
    model: type[Any], rows: Sequence[Any], insert: Callable[[], Any], *, using: str | None = None
) -> None:
    """Insert `rows` (unsaved) through `insert`, their quiet hours applied."""
    # Decided first: a declaration that cannot be used (a calendar gone) then refuses the rows
    # without breaking the caller's transaction.
    decided = [(row, decision) for row in rows if (decision := _before_insert(model, row))]
    with transaction.atomic(using=using, savepoint=False):  # one with the insert
        insert()
        inserted = [(row, decision) for row, decision in decided if row.pk is not None]
        record.write(_created_entry(row, decision) for row, decision in inserted)
        held = [row for row, decision in inserted if isinstance(decision, QuietHold)]
        fold(model, {(_entity(model, row), row.due_at) for row in held}, using=using)


def _before_insert(model: type[Any], row: Any) -> Decision | None:
    decision = decide(model, row, row.due_at)
    if isinstance(decision, QuietHold):
        row.business_due_at = row.business_due_at or row.due_at
        row.due_at = decision.until
    elif isinstance(decision, Skip):
        row.status, row.cancelled_at = Status.CANCELLED, timezone.now()
        row.cancel_reason = decision.reason
    return decision


def _created_entry(row: Any, decision: Decision) -> EventHistory:
    if isinstance(decision, Skip):
        return record.entry(row, Kind.CANCELLED, detail={"reason": decision.reason})
    detail = {
        "how": HOW,
        "reason": decision.reason,
        "before": row.business_due_at.isoformat(),
        "after": row.due_at.isoformat(),
    }
    return record.entry(row, Kind.RESCHEDULED, detail=detail)


# --- after a move ------------------------------------------------------------------------


def after_move(
    model: type[Any], moved: Iterable[Any], *, using: str, shifted_by: timedelta | None = None
) -> None:
    """Apply quiet hours to the `moved` rows (pks) still pending, in the move's transaction.

    A shifted row that quiet hours held is placed again from its shifted business time: it is
    due when that time is released, or at that time if it is no longer quiet.
    """
    related = (*model.related_for_event, *model.quiet_related)
    rows = model._default_manager.using(using).filter(pk__in=list(moved), status=Status.PENDING)
    holds: dict[QuietHold, list[Any]] = defaultdict(list)
    skips: dict[Any, str] = {}
    for row in rows.select_related(*related).iterator(chunk_size=2000):
        at = _placed_at(model, row, shifted_by)
        decision = decide(model, row, at) or (QuietHold(at, "") if at != row.due_at else None)
        if isinstance(decision, Skip):
            skips[row.pk] = decision.reason
        elif decision is not None and decision.until != row.due_at:
            holds[decision].append(row)
    cancel(model, skips, using=using)
    for hold, held in holds.items():
        _hold(model, [row.pk for row in held], hold, using=using)
    fold(model, {(_entity(model, r), h.until) for h, rs in holds.items() for r in rs}, using=using)


def _placed_at(model: type[Any], row: Any, shifted_by: timedelta | None) -> datetime:
    if shifted_by is None or row.business_due_at is None:
        return row.due_at
    spans = spans_for(model, row)
    before = row.business_due_at - shifted_by
    released = None if spans is None else released_at(spans, before)
    was_held = released is not None and released.astimezone(UTC) == row.due_at - shifted_by
    return row.business_due_at if was_held else row.due_at


def _hold(model: type[Any], pks: list[Any], hold: QuietHold, *, using: str) -> None:
    reason = hold.reason or "back to the time asked for: no longer in quiet hours"
    values = {
        "due_at": hold.until,
        "business_due_at": Coalesce(F("business_due_at"), F("due_at")),
        "updated_at": Now(),
    }
    rows = model._default_manager.using(using).filter(pk__in=pks)
    bulk.apply(rows, bulk.Change(Kind.RESCHEDULED, values, {"how": HOW, "reason": reason}))


# --- folding and cancelling --------------------------------------------------------------


def _entity(model: type[Any], row: Any) -> tuple[Any, ...] | None:
    attnames = fold_by_attnames(model)
    return tuple(getattr(row, name) for name in attnames) if attnames else None


def fold(
    model: type[Any], groups: set[tuple[tuple[Any, ...] | None, datetime]], *, using: str | None
) -> None:
    """Per entity and release time: the pending rows due then fold into the one the business
    asked for last; the others are cancelled, naming it."""
    attnames = fold_by_attnames(model)
    matches = [
        Q(due_at=until, **dict(zip(attnames, entity, strict=True)))
        for entity, until in groups
        if entity is not None
    ]
    if not matches:
        return
    match = reduce(operator.or_, matches)
    business = Coalesce(F("business_due_at"), F("due_at"))
    found = (
        model._default_manager.using(using)
        .filter(match, status=Status.PENDING)
        .select_for_update(of=("self",))
        .annotate(business=business)
        .values_list("pk", "business", "due_at", *attnames)
        .order_by("business", "pk")
    )
    members: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for pk, _business, due_at, *entity in found:
        members[(due_at, *entity)].append(pk)  # in order: the last is the latest
    losers = {pk: folded_reason(pks[-1]) for pks in members.values() for pk in pks[:-1]}
    cancel(model, losers, using=using)


def cancel(model: type[Any], reasons: dict[Any, str], *, using: str | None) -> None:
    """Cancel pending rows, each with its own reason, in one statement with their history."""
    if not reasons:
        return
    by_reason: dict[str, list[Any]] = defaultdict(list)
    for pk, reason in reasons.items():
        by_reason[reason].append(pk)
    reason_of = Case(
        *(When(pk__in=pks, then=Value(reason)) for reason, pks in by_reason.items()),
        output_field=models.CharField(),
    )
    values = {
        "status": Status.CANCELLED,
        "cancelled_at": Now(),
        "cancel_reason": reason_of,
        "updated_at": Now(),
    }
    rows = model._default_manager.using(using).filter(pk__in=list(reasons), status=Status.PENDING)
    bulk.apply(rows, bulk.Change(Kind.CANCELLED, values))
