import base64
import itertools
import json
from datetime import datetime
from typing import Any

import time_machine

from scheduling.delivery.sweep.results import SweepResult
from scheduling.delivery.sweep.run import sweep
from scheduling.recurring.models import RecurringSchedule, ScheduledOccurrence
from tests.conftest import CURRENT_TIME

NAMES = itertools.count()


def make_schedule(**fields: Any) -> RecurringSchedule:
    """A schedule created at CURRENT_TIME (its first fire is the next minute by default)."""
    defaults = {"cron": "* * * * *", "queue": "reports", "starts_at": CURRENT_TIME}
    with time_machine.travel(CURRENT_TIME, tick=False):
        return RecurringSchedule.objects.create(
            **{"name": f"schedule-{next(NAMES)}", **defaults, **fields}
        )


def sweep_at(now: datetime) -> SweepResult:
    """One sweep as if the clock read `now` (the claim's cutoff and the successor's `now`)."""
    with time_machine.travel(now, tick=False):
        return sweep(ScheduledOccurrence, now=now)


def sweep_until_idle(now: datetime, limit: int = 500) -> int:
    """Sweep repeatedly at `now` until nothing is left to publish; returns how many were."""
    total = 0
    for _ in range(limit):
        result = sweep_at(now)
        total += result.delivered + result.expired
        if not result.delivered and not result.expired:
            return total
    raise AssertionError("still delivering after the limit")


def json_bodies(broker, queue: str) -> list[dict[str, Any]]:
    """Plain JSON messages on a Redis list, oldest first."""
    return [json.loads(raw) for raw in reversed(broker.lrange(queue, 0, -1))]


def celery_body(message: dict[str, Any]) -> Any:
    return json.loads(base64.b64decode(message["body"]))


def pending(schedule: RecurringSchedule) -> list[ScheduledOccurrence]:
    return list(schedule.occurrences.filter(status="pending").order_by("due_at"))
