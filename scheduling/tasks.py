from dataclasses import asdict
from typing import Any

from celery import Task, shared_task

from scheduling.conf import scheduling_settings
from scheduling.registry import get_scheduled_model
from scheduling.sweep import sweep


class EventHandlerTask(Task):
    """Base for handler tasks: `@shared_task(base=EventHandlerTask, name=...)`.

    A handler's effect may fail (SMTP down, push service timing out). Acked on failure, the
    event would be lost: the row is delivered and will not be published again. So failures are
    retried with exponential backoff; a worker killed mid-task gets the message back (acks
    late, rejected on worker loss). Retries keep the task id, which is the event id, and
    `handle_once` keeps the effect single.
    """

    acks_late = True
    reject_on_worker_lost = True
    autoretry_for = (Exception,)
    retry_backoff = 5
    retry_backoff_max = 600
    retry_jitter = True
    max_retries = 12


@shared_task(name="scheduling.sweep", ignore_result=True, acks_late=False)
def sweep_task(label: str, slot: int = 0) -> dict[str, Any]:
    hold = min(scheduling_settings().sweep_hold, scheduling_settings().sweep_interval)
    return asdict(sweep(get_scheduled_model(label), slot=slot, hold=hold))
