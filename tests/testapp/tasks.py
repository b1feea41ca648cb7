from typing import Any

from celery import shared_task

from scheduling.handling import handle_once
from tests.testapp.models import PingEffect


@shared_task(name="testapp.handle_ping", acks_late=True)
def handle_ping(event: dict[str, Any]) -> str:
    with handle_once(event) as row:
        if row is None:
            return "skipped"
        PingEffect.objects.create(event_id=event["id"], ping_id=row.ping_id)
        return "handled"
