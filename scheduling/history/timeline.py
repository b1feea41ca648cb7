"""A scheduled row's story, oldest first: its logged entries, and the happy path read from its
own columns (created_at: scheduled; delivered_at: published; handled_at: handled)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from scheduling.history.models import EventHistory, Kind
from scheduling.history.record import late_by, written_for

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
    logged = [Entry.logged(e) for e in written_for(type(row), row.pk).order_by("at", "pk")]
    entries = [*logged, *from_columns(row, logged)]
    return sorted(entries, key=lambda entry: (entry.at, ORDER[entry.kind]))


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
