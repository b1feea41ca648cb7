from dataclasses import asdict
from typing import Any

from celery import shared_task

from scheduling.dispatch import sweep
from scheduling.registry import get_scheduled_model


@shared_task(name="scheduling.sweep", ignore_result=True, acks_late=False)
def sweep_task(label: str, slot: int = 0) -> dict[str, Any]:
    return asdict(sweep(get_scheduled_model(label), slot=slot))
