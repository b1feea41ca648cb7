from socket import gethostname
from typing import Any

from celery import Task, shared_task

from scheduling.delivery.tasks import EventHandlerTask
from scheduling.jobs.taskruns import run_enqueued
from scheduling.rows.djangotasks import RUN_TASK


@shared_task(bind=True, base=EventHandlerTask, name=RUN_TASK, ignore_result=True)
def run_task(self: Task, event: dict[str, Any]) -> None:
    """A django.tasks task SchedulingBackend stored, published by the sweep when due."""
    run_enqueued(event, worker_id=self.request.hostname or gethostname())
