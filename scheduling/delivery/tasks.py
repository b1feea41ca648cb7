import logging
import time
from dataclasses import asdict
from typing import Any

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError, connections

from scheduling.delivery.handling.task_handlers import run_handler
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.conf import scheduling_settings
from scheduling.rows.djangotasks import RUN_HANDLER
from scheduling.rows.partitions import maintain_all
from scheduling.rows.purge import PURGE_TIME_BUDGET, purge_all
from scheduling.rows.registry import get_scheduled_model, scheduled_models

log = logging.getLogger(__name__)

# Seconds a handler waits for an unreachable database: past a failover's usual length (a
# promotion plus the manager's detection), short of the handling timeout's republication.
DATABASE_WAIT = 60.0
DATABASE_RETRY_FIRST = 0.25
DATABASE_RETRY_MAX = 5.0


class EventHandlerTask(Task):
    """Base for handler tasks: `@shared_task(base=EventHandlerTask, name=...)`.

    Acks late and is rejected back to the broker when its worker dies mid-task, so a killed
    worker's event is handled by another. A failure is not retried here: `handle_once`
    records it on the row and the sweep publishes the event again after a backoff, so every
    retry is visible in the database. The one exception: an unreachable database, which
    cannot record anything, is waited for (below). A plain @shared_task works too, without
    that wait: its events are published again after the model's handling timeout.
    """

    acks_late = True
    reject_on_worker_lost = True
    # Read by the callbacks' check (scheduling.delivery.publishing.targets): a task built on
    # this class handles a scheduled model's events, never a keyed job's or a schedule's.
    handles_scheduled_events = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the handler; while the database cannot be reached (a failover, a restart), wait
        for it here, with the message still unacknowledged, instead of leaving the event to
        the reconciliation's handling timeout.

        Running the handler again is as safe as that republication: the effect's transaction
        never committed (at-least-once) or the committed claim makes the rerun a no-op
        (at-most-once); an error recorded on the row leaves it pending, so the rerun does
        nothing and the sweep's backoff stands.
        """
        waited, delay = 0.0, DATABASE_RETRY_FIRST
        # This loop replaces a broken connection itself, so the round trip of Django's health
        # check (CONN_HEALTH_CHECKS: a SELECT 1 before each task) is saved: a kept connection
        # that broke (a failover, a restart, a killed backend) fails the first statement, and
        # the handler runs again at once on a new one, before anything was done.
        skip_health_checks()
        fresh = False
        while True:
            try:
                return super().__call__(*args, **kwargs)
            except (OperationalError, InterfaceError) as exc:
                if not fresh:
                    fresh = True
                    log.info(
                        "%s: database connection lost (%s); again on a new one", self.name, exc
                    )
                    connections.close_all()
                    continue
                if waited + delay > DATABASE_WAIT:
                    raise
                log.warning("%s: database unavailable (%s); again in %.1f s", self.name, exc, delay)
                connections.close_all()  # the next try opens a connection to the new primary
                time.sleep(delay)
                waited, delay = waited + delay, min(delay * 2, DATABASE_RETRY_MAX)


def skip_health_checks() -> None:
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None:
            connection.health_check_done = True  # type: ignore[attr-defined]


class SweepTask(Task):
    """The sweep's task class: its worker strategy logs each tick's "received" line at DEBUG
    on the framework's own logger (scheduling.delivery.metrics.logs.sweep_strategy)."""

    Strategy = "scheduling.delivery.metrics.logs:sweep_strategy"


@shared_task(base=SweepTask, name="scheduling.sweep", ignore_result=True, acks_late=False)
def sweep_task(label: str, slot: int = 0) -> dict[str, Any]:
    hold = min(scheduling_settings().sweep_hold, scheduling_settings().sweep_interval)
    return asdict(sweep(get_scheduled_model(label), slot=slot, hold=hold))


@shared_task(name="scheduling.purge", ignore_result=True)
def purge_task(time_budget: float = PURGE_TIME_BUDGET) -> list[dict[str, Any]]:
    maintain_all(scheduled_models())  # partitioned models' partitions premade ahead
    return [asdict(result) for result in purge_all(time_budget=time_budget)]


@shared_task(base=EventHandlerTask, name=RUN_HANDLER, ignore_result=True)
def run_handler_task(event: dict[str, Any]) -> None:
    """The handler of a model whose handler_task is a django.tasks @task."""
    run_handler(event)
