"""One way to write a handler: the function that does one row's effect, declared once.

    @handler(ScheduledOrderEmail, name="shop.send_order_email")
    def send_order_email(row: ScheduledOrderEmail) -> str:
        send_mail(...)
        return "sent"

`handler` registers a Celery task (on EventHandlerTask) under `name` that takes a message of
one event (`handler_batch_size = 0`) or of a batch (`handler_batch_size = N`) alike, and runs
each row through `handle_batch`'s `each`: at least once, each row in a transaction of its own
that locks it, checks it still awaits handling as this version, marks it handled and commits
with what the effect wrote; at most once (`at_most_once = True`), the row's claim commits
before the effect begins, and the effect is where it begins. So neither the batch size nor the
delivery guarantee changes the handler, and no row stays locked across more than one effect.

Options:
- `setup(rows)`: once a message, before any effect (one SMTP connection, the recipients of the
  whole batch read in a few queries). What it returns is given to the effect (and `prepare`)
  as a second argument; if it is a context manager, it is entered and what it yields is given
  instead, and it is exited after the last effect. Without `setup`, both take the row alone.
- `prepare(row[, resource])`: before each row's effect and outside its transaction (reopen a
  connection the last effect broke); its exception is recorded on the row, to be retried after
  the backoff, and the row's effect does not run, whatever the guarantee.
- `also`: names of tasks this handler replaces (e.g. a former batch task's), so messages
  already queued under them are still handled.

A row's exception is recorded on that row alone (`RetryLater(not_before=...)` asks for a later
next try). A message of one event returns the effect's value ("skipped" when the row no longer
needs handling) and raises the row's exception, as a plain Celery task would; a batch message
returns a count of what became of its rows. `handle_once` and `handle_batch` remain the lower
level.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from celery import Task, shared_task

from scheduling.delivery.handling.batches import handle_batch
from scheduling.delivery.tasks import EventHandlerTask
from scheduling.rows.models import ScheduledEvent

E = TypeVar("E", bound=ScheduledEvent)
SKIPPED = "skipped"


@dataclass(frozen=True)
class Outcome(Generic[E]):
    """What a message's rows became: those that needed handling, the effects' values (by pk)
    and the failures (by pk); the others were skipped."""

    rows: list[E]
    results: dict[Any, Any]
    failures: dict[Any, BaseException]


@dataclass(frozen=True)
class DeclaredHandler(Generic[E]):
    """A model's effect, with what runs once a message (`setup`) and before each row
    (`prepare`)."""

    model: type[E]
    effect: Callable[..., Any]
    setup: Callable[[list[E]], Any] | None = None
    prepare: Callable[..., object] | None = None

    def handle(self, events: Sequence[Mapping[str, Any]]) -> Outcome[E]:
        """Each event's row through its effect, and what became of each."""
        results: dict[Any, Any] = {}
        with handle_batch(events, self.model) as batch:
            if batch.rows:
                with ExitStack() as stack:
                    resource = self.opened(stack, batch.rows)
                    results = batch.each(
                        self.bound(self.effect, resource),
                        prepare=self.bound(self.prepare, resource) if self.prepare else None,
                    )
        return Outcome(batch.rows, results, batch.failures)

    def opened(self, stack: ExitStack, rows: list[E]) -> Any:
        if self.setup is None:
            return None
        resource = self.setup(rows)
        if isinstance(resource, AbstractContextManager):
            return stack.enter_context(resource)
        return resource

    def bound(self, function: Callable[..., Any], resource: Any) -> Callable[[E], Any]:
        if self.setup is None:
            return function
        return lambda row: function(row, resource)


def handler(
    model: type[E],
    *,
    name: str,
    also: Iterable[str] = (),
    setup: Callable[[list[E]], Any] | None = None,
    prepare: Callable[..., object] | None = None,
) -> Callable[[Callable[..., Any]], Task]:
    """Declare `effect` as `model`'s handler: registers the Celery task `name` (and `also`)
    and returns it."""

    def register(effect: Callable[..., Any]) -> Task:
        declared = DeclaredHandler(model, effect, setup, prepare)
        run = task_body(declared, effect)
        for alias in also:
            shared_task(base=EventHandlerTask, name=alias)(run)
        task: Task = shared_task(base=EventHandlerTask, name=name)(run)
        task.declared = declared  # type: ignore[attr-defined]
        return task

    return register


def task_body(declared: DeclaredHandler[Any], effect: Callable[..., Any]) -> Callable[..., Any]:
    # Not functools.wraps: Celery checks a call's arguments against the signature it finds,
    # which would then be the effect's (row, resource), not the message's.
    def run(*args: Any, event: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        events = kwargs.pop("events", None)
        if kwargs:
            raise TypeError(
                f"unexpected arguments {sorted(kwargs)}: a message has `event` or `events`"
            )
        if args:  # positional, as a direct call or an older message gives it
            (given,) = args
            events, event = (given, None) if isinstance(given, list) else (None, given)
        if event is not None:
            return one_event(declared, event)
        return batch_summary(declared.handle(events or []), len(events or []))

    run.__name__ = run.__qualname__ = getattr(effect, "__name__", "handler")
    run.__module__ = effect.__module__
    run.__doc__ = effect.__doc__
    return run


def one_event(declared: DeclaredHandler[Any], event: Mapping[str, Any]) -> Any:
    outcome = declared.handle([event])
    for row in outcome.rows:
        if row.pk in outcome.failures:
            raise outcome.failures[row.pk]
        if row.pk in outcome.results:
            return outcome.results[row.pk]
    return SKIPPED


def batch_summary(outcome: Outcome[Any], events: int) -> str:
    handled, failed = len(outcome.results), len(outcome.failures)
    return f"{handled} handled, {failed} failed, {events - handled - failed} skipped"
