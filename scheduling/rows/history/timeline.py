"""A scheduled row's story, oldest first: its logged entries, and the happy path read from its
own columns (created_at: scheduled; delivered_at: published; handled_at: handled)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Case, Q, QuerySet, Value, When

from scheduling.rows.history.models import EventHistory, Kind
from scheduling.rows.history.record import late_by, written_for

# Entries at the same instant read in lifecycle order.
ORDER = {kind.value: position for position, kind in enumerate(Kind)}


@dataclass(frozen=True)
class Entry:
    at: datetime
    kind: str
    attempt: int
    version: int
    actor: str
    detail: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def logged(cls, row: EventHistory) -> Entry:
        return cls(row.at, row.kind, row.attempt, row.version, row.actor, row.detail)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "at": self.at.isoformat().replace("+00:00", "Z")}


def timeline(row: Any) -> list[Entry]:
    """Every entry of `row` (a ScheduledEvent), oldest first."""
    return timeline_page(row, offset=0, limit=timeline_count(row))


def timeline_count(row: Any) -> int:
    return _logged(row).count() + len(_columns(row))


def timeline_page(row: Any, *, offset: int, limit: int) -> list[Entry]:
    """Entries offset to offset + limit of `row`'s timeline: one query for the logged ones of
    the page (by the index on model, row, at), a few counts to place the column entries."""
    logged = _logged(row)
    placed = _placed(_columns(row), logged)
    inside = {position: entry for position, entry in placed if offset <= position < offset + limit}
    skipped = offset - sum(1 for position, _ in placed if position < offset)
    rows = iter(logged[skipped : skipped + limit - len(inside)])
    page = []
    for position in range(offset, offset + limit):
        entry = inside.get(position) or next((Entry.logged(found) for found in rows), None)
        if entry is None:
            break
        page.append(entry)
    return page


def _logged(row: Any) -> QuerySet[EventHistory]:
    # Entries at the same instant (one transaction's) in lifecycle order, as ORDER sorts them.
    order = Case(*(When(kind=kind, then=Value(n)) for kind, n in ORDER.items()), default=Value(0))
    return written_for(type(row), row.pk).alias(order=order).order_by("at", "order", "pk")


def _columns(row: Any) -> list[Entry]:
    history = written_for(type(row), row.pk)
    first_move = history.filter(kind=Kind.RESCHEDULED).order_by("at", "pk").first()
    logged_publish = row.delivered_at is not None and (
        history.filter(kind=Kind.PUBLISHED, at=row.delivered_at).exists()
    )
    moves = [] if first_move is None else [Entry.logged(first_move)]
    published = [Entry(row.delivered_at, Kind.PUBLISHED, 0, 0, "")] if logged_publish else []
    return from_columns(row, [*moves, *published])


def _placed(columns: list[Entry], logged: QuerySet[EventHistory]) -> list[tuple[int, Entry]]:
    """Each column entry with its position in the whole timeline: after every logged entry
    that sorts before it or with it (a logged entry comes first at the same key)."""
    placed = []
    for index, entry in enumerate(sorted(columns, key=_key)):
        same_or_earlier = [kind for kind, n in ORDER.items() if n <= ORDER[entry.kind]]
        before = logged.filter(Q(at__lt=entry.at) | Q(at=entry.at, kind__in=same_or_earlier))
        placed.append((before.count() + index, entry))
    return placed


def _key(entry: Entry) -> tuple[datetime, int]:
    return entry.at, ORDER[entry.kind]


def from_columns(row: Any, logged: list[Entry]) -> list[Entry]:
    entries = [scheduled(row, logged)]
    published_at = {entry.at for entry in logged if entry.kind == Kind.PUBLISHED}
    if row.delivered_at is not None and row.delivered_at not in published_at:
        late = {"late_by_seconds": late_by(row.delivered_at, row.business_time)}
        entries.append(
            Entry(row.delivered_at, Kind.PUBLISHED, row.attempts, row.version, "sweep", late)
        )
    if row.handled_at is not None:
        late = {"late_by_seconds": late_by(row.handled_at, row.business_time)}
        entries.append(
            Entry(row.handled_at, Kind.HANDLED, row.attempts, row.version, "worker", late)
        )
    return entries


def scheduled(row: Any, logged: list[Entry]) -> Entry:
    moves = [entry for entry in logged if entry.kind == Kind.RESCHEDULED]
    first_due = moves[0].detail.get("before") if moves else row.business_time.isoformat()
    return Entry(row.created_at, Kind.SCHEDULED, 0, 1, "", {"due_at": first_due})
