from dataclasses import asdict
from typing import Any

from celery import Task, shared_task

from scheduling.conf import scheduling_settings
from scheduling.purge import PURGE_TIME_BUDGET, purge_all
from scheduling.registry import get_scheduled_model
from scheduling.sweep import sweep


class EventHandlerTask(Task):
    """Base for handler tasks: `@shared_task(base=EventHandlerTask, name=...)`.

    Acks late and is rejected back to the broker when its worker dies mid-task, so a killed
    worker's event is handled by another. A failure is not retried here: `handle_once`
    records it on the row and the sweep publishes the event again after a backoff, so every
    retry is visible in the database (optional: a plain @shared_task works the same).
    """

    acks_late = True
    reject_on_worker_lost = True


@shared_task(name="scheduling.sweep", ignore_result=True, acks_late=False)
def sweep_task(label: str, slot: int = 0) -> dict[str, Any]:
    hold = min(scheduling_settings().sweep_hold, scheduling_settings().sweep_interval)
    return asdict(sweep(get_scheduled_model(label), slot=slot, hold=hold))


@shared_task(name="scheduling.purge", ignore_result=True)
def purge_task(time_budget: float = PURGE_TIME_BUDGET) -> list[dict[str, Any]]:
    return [asdict(result) for result in purge_all(time_budget=time_budget)]
