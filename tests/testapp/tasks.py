import time
from typing import Any

from celery import shared_task

from scheduling.handling import handle_once
from scheduling.tasks import EventHandlerTask
from tests.testapp.models import PingEffect, ScheduledPing


@shared_task(base=EventHandlerTask, name="testapp.handle_ping")
def handle_ping(event: dict[str, Any]) -> str:
    with handle_once(event, ScheduledPing) as row:
        if row is None:
            return "skipped"
        if row.ping.name.startswith("slow:"):
            # Fault tests kill the worker here, mid-handler, inside handle_once's transaction.
            time.sleep(float(row.ping.name.removeprefix("slow:")))
        PingEffect.objects.create(event_id=event["id"], ping_id=row.ping_id)
        return "handled"
