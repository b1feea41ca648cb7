"""Overlap policies, applied by the sweep before it publishes a batch (the keep_back hook): a
timeline fire due while the schedule's previous fire is not handled yet is

- `skip`: cancelled, its reason naming the policy and the occurrence it waited for (in its
  `cancel_reason` and its `cancelled` history entry), and the timeline goes on to the next fire;
- `buffer_one`: held, pending: its due_at moves a recheck later (business_due_at keeps its fire
  time, which its id and payload keep too), one `rescheduled` entry says why; once the
  predecessor is handled it is published. Only one waits: the timeline goes on from it once it
  is published, so the fire times that passed meanwhile are not sent, and catch-up rows behind
  it are skipped.

A skipped fire stays a row, cancelled with its reason, so the schedule's occurrence list (admin,
API) shows every fire time and what became of it, where an operator already looks.

"Not handled" is a published timeline occurrence without `handled_at` (or back to pending for a
retry after a failed handling), published less than the handling timeout ago: past it, as the
reconciliation would, the predecessor is given up on and no longer holds anything back.
Manual triggers and republished rows are never held.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.db.models import F, Q
from django.db.models.functions import Coalesce, Now

from scheduling.recurring.chain import occurrences_chain
from scheduling.recurring.policies import OverlapPolicy
from scheduling.recurring.shapes import Occurrence
from scheduling.rows.history import bulk
from scheduling.rows.history.models import Kind
from scheduling.rows.states import Status
from scheduling.time.times import iso_utc

# How often a held fire looks at its predecessor again: the sweep's default tick.
RECHECK = timedelta(seconds=1)


class Predecessor(NamedTuple):
    pk: int
    due_at: datetime


def occurrences_keep_back(
    rows: Sequence[Occurrence], *, now: datetime, model: type[Any]
) -> set[int]:
    """The claimed rows (`model`: ScheduledOccurrence) not to publish now, each skipped or held
    as its policy says."""
    # First: a skipped row's timeline goes on from its planned time, which jitter keeps there.
    preload_fire_times(rows, model=model)
    candidates = [row for row in rows if _subject_to_overlap(row)]
    return _skip_or_buffer(candidates, now=now, model=model) if candidates else set()


def _skip_or_buffer(candidates: list[Occurrence], *, now: datetime, model: type[Any]) -> set[int]:
    schedule_ids = {row.schedule_id for row in candidates}
    waiting_for = _unhandled_predecessors(schedule_ids, now=now, model=model)
    skipped: list[tuple[Occurrence, Predecessor]] = []
    buffered: list[tuple[Occurrence, Predecessor]] = []
    for group in _by_schedule(candidates).values():
        blocker = waiting_for.get(group[0].schedule_id)
        # Rows of one batch follow one another: each waits for the one before it.
        blocked = group if blocker is not None else group[1:]
        blocker = blocker or Predecessor(group[0].pk, group[0].due_at)
        if not blocked:
            continue
        if group[0].schedule.overlap_policy == OverlapPolicy.BUFFER_ONE:
            buffered.append((blocked[0], blocker))
            blocked = blocked[1:]
        skipped.extend((row, blocker) for row in blocked)
    _skip(skipped, now=now, model=model)
    _buffer(buffered, now=now, model=model)
    return {row.pk for row, _ in [*skipped, *buffered]}


def _subject_to_overlap(row: Occurrence) -> bool:
    # attempts counts publications: a row published before was let through already.
    schedule = row.schedule
    return (
        schedule.overlap_policy != OverlapPolicy.ALLOW
        and not row.manual
        and row.attempts == 0
        and not row.is_stale(schedule)
    )


def _by_schedule(
    rows: Sequence[Occurrence],
) -> dict[int, list[Occurrence]]:
    groups: dict[int, list[Occurrence]] = defaultdict(list)
    for row in sorted(rows, key=lambda row: (row.due_at, row.pk)):
        groups[row.schedule_id].append(row)
    return groups


def _unhandled_predecessors(
    schedule_ids: set[int], *, now: datetime, model: type[Any]
) -> dict[int, Predecessor]:
    """Per schedule, its latest published timeline occurrence still awaiting handling."""
    timeout = timedelta(seconds=model.get_handling_timeout())
    published = Q(status=Status.DELIVERED) | Q(status=Status.PENDING, attempts__gt=0)
    rows = (
        model.objects.filter(published, schedule_id__in=schedule_ids)
        .filter(manual=False, handled_at__isnull=True, delivered_at__gt=now - timeout)
        .order_by("due_at")
        .values_list("schedule_id", "pk", "due_at")
    )
    return {schedule_id: Predecessor(pk, due_at) for schedule_id, pk, due_at in rows}


def _reason(policy: str, blocker: Predecessor) -> str:
    return (
        f"overlap_policy {policy}: occurrence {blocker.pk} "
        f"(due {iso_utc(blocker.due_at)}) not handled yet"
    )


def _skip(
    skipped: list[tuple[Occurrence, Predecessor]], *, now: datetime, model: type[Any]
) -> None:
    """Cancel the skipped rows with their reason, then carry their timelines on."""
    for row, blocker in skipped:
        reason = _reason(OverlapPolicy.SKIP, blocker)
        values = {"status": Status.CANCELLED, "cancel_reason": reason, "cancelled_at": Now()}
        detail = {"overlap_policy": OverlapPolicy.SKIP.value, "waiting_for": blocker.pk}
        rows = model.objects.located([row]).filter(status=Status.PENDING)
        bulk.apply(rows, bulk.Change(Kind.CANCELLED, values, detail), held=True)
        row.status = Status.CANCELLED
    # Cancelled first: the successor of a head would otherwise meet it in the one-pending index.
    occurrences_chain(model=model, delivered=[], expired=[row for row, _ in skipped], now=now)


def _buffer(
    buffered: list[tuple[Occurrence, Predecessor]], *, now: datetime, model: type[Any]
) -> None:
    """Move each held row a recheck later; the first hold of a row is recorded, not the rest."""
    if not buffered:
        return
    rows = [row for row, _ in buffered]
    held_before = model.objects.located(rows).filter(business_due_at__isnull=False)
    already = set(held_before.values_list("pk", flat=True))
    values = {
        "due_at": now + RECHECK,
        "business_due_at": Coalesce(F("business_due_at"), F("due_at")),
    }
    model.objects.located(row for row in rows if row.pk in already).update(**values)
    for row, blocker in buffered:
        if row.pk in already:
            continue
        detail = {
            "reason": _reason(OverlapPolicy.BUFFER_ONE, blocker),
            "overlap_policy": OverlapPolicy.BUFFER_ONE.value,
            "waiting_for": blocker.pk,
        }
        change = bulk.Change(Kind.RESCHEDULED, values, detail)
        bulk.apply(model.objects.located([row]), change, held=True)


def needs_planned_time(schedule: Any) -> bool:
    """An occurrence of this schedule may be due later than its fire time (jitter, held)."""
    return schedule.overlap_policy == OverlapPolicy.BUFFER_ONE or bool(schedule.jitter)


def preload_fire_times(rows: Sequence[Occurrence], *, model: type[Any]) -> None:
    """business_due_at is left out of the claim; buffer_one and jittered rows read it for their
    fire time: one query for the batch instead of one per row."""
    wanted = [row for row in rows if needs_planned_time(row.schedule)]
    if not wanted:
        return
    stored = dict(model.objects.located(wanted).values_list("pk", "business_due_at"))
    for row in wanted:
        row.business_due_at = stored.get(row.pk)
