"""Batched handling: a model with `handler_batch_size` N gets messages of up to N events, and its
handler runs them through `handle_batch`, each row still handled once (or at most once), and
no row lock held across more than one row's effect.

    @shared_task(base=EventHandlerTask, name="trainings.send_training_reminders")
    def send_training_reminders(events):
        with handle_batch(events, ScheduledTrainingNotification) as batch:
            batch.each(send_reminder)   # one row at a time, each in a transaction of its own

`batch.rows` are the rows that still need handling: this version, delivered, not handled, not
claimed; rows handled, moved, cancelled or republished as another version since are left out.
They are read locked in one statement (in pk order, so duplicate deliveries of overlapping
batches queue instead of deadlocking), which waits for the publishing sweep's commit; that
transaction commits at once, so the body runs with no row locked. A cancel or reschedule of
the batch's rows (or of what they lock in turn, such as a training) waits at most for the one
effect under way, not for the whole batch.

`batch.each(effect)` runs `effect(row)` for each row in a transaction of its own, whose first
statement takes the row: locked again, still awaiting handling as this version (else skipped:
cancelled, moved, or handled by a duplicate delivery meanwhile), and marked handled, to commit
with what the effect wrote. At-least-once: an exception rolls that row's transaction back and is
recorded on the row alone (error, backoff or `failed`, attempts, history, signals), to be
retried after its backoff. `batch.failed(row, exc)` records a failure the body found itself.

At-most-once models: the row's claim commits before its effect, and its `handled_at` commits
with the effect's transaction, as `handle_once` does for one event; a failure during an effect
leaves that row `failed` for a person. A crash mid-batch thus leaves in flight only the row
whose effect was under way; the rows not reached are republished after the handling timeout.

Either way, rows the body never passes to `each` (nor to `failed`) are handled without effect,
in one UPDATE, after the body; what the body writes outside `each` is in no row's transaction.
An exception out of the body records every row that `each` has not taken, to be retried after
its backoff; the rows whose effects committed stay handled.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, TypeVar

from django.db import transaction
from django.db.models import Q, QuerySet
from django.db.models.functions import Now

from scheduling.delivery import metrics
from scheduling.delivery.handling.once import Handling, record_failure, record_failure_during_effect
from scheduling.delivery.handling.sql import statements_for
from scheduling.delivery.handling.worker import as_worker
from scheduling.rows.databases import database_of
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.partitions import partitioning_of, retrying_moved_rows
from scheduling.rows.querysets import awaiting_handling_row_q

E = TypeVar("E", bound=ScheduledEvent)
T = TypeVar("T")


@dataclass
class Batch(Generic[E]):
    """The rows of one batch message that still need handling, and what became of them."""

    model: type[E]
    rows: list[E]
    failures: dict[Any, BaseException] = field(default_factory=dict)
    # Rows `each` took (pks): handled, failed, found not ours, or (at-most-once) effect begun.
    effects: set[Any] = field(default_factory=set)

    @cached_property
    def using(self) -> str:
        return database_of(self.model)

    def failed(self, row: E, exc: BaseException) -> None:
        """Record this row's failure alone; the other rows go on. Only for a row `each` has not
        taken (a row it took has its own outcome)."""
        if row.pk in self.failures or row.pk in self.effects:
            return
        self.failures[row.pk] = exc
        record_failure(self.model, row, exc)

    def each(
        self, effect: Callable[[E], T], *, prepare: Callable[[E], object] | None = None
    ) -> dict[Any, T]:
        """Run `effect(row)` for each row not failed yet, each in a transaction of its own;
        {pk: what it returned} for those that succeeded. A row's exception is recorded on that
        row and not raised.

        `prepare(row)`, when given, runs first, before the row's transaction (reopen a
        connection the last effect broke): its exception is recorded like one before an
        at-most-once effect, to be retried after a backoff, and the row's effect does not run.
        """
        if self.model.at_most_once:
            return AtMostOnceEffects(self, effect, prepare).run()
        return AtLeastOnceEffects(self, effect, prepare).run()

    def pending(self) -> list[E]:
        """The rows neither failed nor taken by `each`."""
        return [r for r in self.rows if r.pk not in self.failures and r.pk not in self.effects]

    def unclaimed(self, pks: Collection[Any]) -> QuerySet[E]:
        """These rows, as this batch's versions, not handled nor claimed since."""
        versions: defaultdict[int, list[Any]] = defaultdict(list)
        for row in self.rows:
            if row.pk in pks:
                versions[row.version].append(row.pk)
        same_version = Q()
        for version, of_version in versions.items():
            same_version |= Q(pk__in=of_version, version=version)
        return self.model.objects.filter(same_version).filter(awaiting_handling_row_q())


class RowEffects(Generic[E, T]):
    """A batch's effects, one row at a time: what each row's effect returned, by pk."""

    def __init__(
        self, batch: Batch[E], effect: Callable[[E], T], prepare: Callable[[E], object] | None
    ) -> None:
        self.batch, self.effect, self.prepare = batch, effect, prepare
        self.statements = statements_for(batch.model)
        self.results: dict[Any, T] = {}


class AtLeastOnceEffects(RowEffects[E, T]):
    """The effects of an at-least-once batch, one row at a time, each in its own transaction.

    The transaction's first statement takes the row (locks it, checks it still awaits handling
    as this version, marks it handled), so the row is locked for its one effect only and the
    mark costs no statement of its own: one UPDATE and one commit a row. A duplicate delivery
    of the row waits on that lock, then finds it handled and skips it.
    """

    def run(self) -> dict[Any, T]:
        for row in self.batch.pending():
            if self.prepared(row):
                self.one(row)
        return self.results

    def prepared(self, row: E) -> bool:
        try:
            if self.prepare is not None:
                self.prepare(row)
        except Exception as exc:
            self.batch.failed(row, exc)
            return False
        return True

    def one(self, row: E) -> None:
        model = self.batch.model
        self.batch.effects.add(row.pk)
        try:
            with transaction.atomic(using=self.batch.using):
                if not self.take(row):
                    return  # cancelled, moved or handled since the batch was read: not ours
                self.results[row.pk] = self.effect(row)
                metrics.record_handled(model)
        except Exception as exc:
            # Rolled back, the row with it: recorded if it still awaits handling as this version.
            self.batch.failures[row.pk] = exc
            record_failure(model, row, exc)

    def take(self, row: E) -> bool:
        if partitioning_of(self.batch.model) is None:
            return self.statements.mark_handled_if_awaiting(row.pk, row.version)

        # A retry() or a backoff may move the row to another partition while we wait for its
        # lock; a savepoint lets the statement run again where the row now is.
        def attempt() -> bool:
            with transaction.atomic(using=self.batch.using):
                return self.statements.mark_handled_if_awaiting(row.pk, row.version)

        return retrying_moved_rows(attempt, f"handling of {self.batch.model._meta.label}")


class AtMostOnceEffects(RowEffects[E, T]):
    """The effects of an at-most-once batch, one row at a time.

    Each row's claim commits before its effect, and its `handled_at` with the effect's own
    transaction, which holds the row locked (a person's retry waits, as in handle_once). The
    transaction that marks a row handled also claims the next one, so each email costs one
    durable commit, not two: a crash between that commit and the next effect leaves that next
    row in flight with nothing done, so in flight is at most one row at any time. A prepare
    that fails on a row claimed so takes the claim back before recording the failure.
    """

    def run(self) -> dict[Any, T]:
        rows = self.batch.pending()
        claimed = False  # the row at hand was claimed by the previous row's commit
        for index, row in enumerate(rows):
            following = rows[index + 1] if index + 1 < len(rows) else None
            claimed = self.one(row, following, claimed=claimed)
        return self.results

    def one(self, row: E, following: E | None, *, claimed: bool) -> bool:
        """Handle `row`; whether `following` is now claimed."""
        if not self.ready(row, claimed=claimed):
            return False
        handling = Handling(self.batch.model, row, True)
        handling.started = True
        self.batch.effects.add(row.pk)
        try:
            return self.effect_of(row, following)
        except Exception as exc:
            record_failure_during_effect(handling, exc)
            self.batch.failures[row.pk] = exc  # recorded above: for a person
            return False

    def ready(self, row: E, *, claimed: bool) -> bool:
        """Prepared and claimed: the effect may begin."""
        try:
            if self.prepare is not None:
                self.prepare(row)
        except Exception as exc:
            if claimed:  # nothing was done under this claim: it goes back
                self.statements.unclaim(row.pk, row.version)
            self.batch.failed(row, exc)
            return False
        if claimed or self.statements.claim(row.pk, row.version):
            return True
        self.batch.effects.add(row.pk)  # another delivery began it: not ours
        return False

    def effect_of(self, row: E, following: E | None) -> bool:
        with transaction.atomic(using=self.batch.using):
            if not self.statements.lock_claimed(row.pk, row.version):
                return False  # retried or cancelled since the claim: not ours
            self.results[row.pk] = self.effect(row)
            metrics.record_handled(self.batch.model)
            if following is None:
                self.statements.mark_claimed_handled(row.pk, row.version)
                return False
            return self.statements.mark_handled_and_claim(row, following)


def handle_batch(
    events: Sequence[Mapping[str, Any]], model: type[E]
) -> AbstractContextManager[Batch[E]]:
    """A context manager yielding the Batch of these events' rows that still need handling."""
    if any(event.get("model") != model._meta.label_lower for event in events):
        raise ValueError(f"a batch for {model._meta.label} holds another model's events")
    return as_worker(_handling(events, model), model, events)


@contextmanager
def _handling(events: Sequence[Mapping[str, Any]], model: type[E]) -> Iterator[Batch[E]]:
    with transaction.atomic(using=database_of(model)):
        batch = Batch(model, locked_rows(model, events))  # waits for the sweep's commit
    # Committed: no row stays locked while the body runs; `each` locks one row at a time.
    try:
        yield batch
    except Exception as exc:
        for row in batch.pending():
            batch.failed(row, exc)
        raise
    untouched = [row.pk for row in batch.pending()]
    if untouched:  # the body had nothing to do for them
        with transaction.atomic(using=batch.using):
            _mark_handled(batch, untouched)


def _mark_handled(batch: Batch[Any], pks: list[Any]) -> None:
    if pks:
        marked = batch.unclaimed(set(pks)).update(handled_at=Now(), updated_at=Now())
        metrics.record_handled(batch.model, marked)


def locked_rows(model: type[E], events: Sequence[Mapping[str, Any]]) -> list[E]:
    """The events' rows that can still be handled as the published version, locked in one
    statement, in the events' order."""
    versions = {event["pk"]: event["version"] for event in events}
    rows = model.objects.select_for_update(of=("self",)).filter(pk__in=versions).order_by("pk")
    if partitioning_of(model) is None:
        found = list(rows)
    else:
        # A retry() or a backoff may move a row to another partition while we wait for its
        # lock; a savepoint lets the locks be taken again where the rows now are.
        def lock() -> list[E]:
            with transaction.atomic(using=database_of(model)):
                return list(rows)

        found = retrying_moved_rows(lock, f"handling of a {model._meta.label} batch")
    by_pk = {row.pk: row for row in found if row.can_be_handled(versions[row.pk])}
    return [by_pk[event["pk"]] for event in events if event["pk"] in by_pk]
