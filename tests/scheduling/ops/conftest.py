from datetime import datetime, timedelta

import time_machine
from django.utils import timezone

from scheduling.delivery import metrics
from tests.testapp.models import ScheduledPing


def record_minute(
    at: datetime, *, published: int, handled: int, failures: int, late: float = 0.3
) -> None:
    """Counts as the sweep and handlers record them, with the clock at `at`."""
    rows = [ScheduledPing(due_at=at - timedelta(seconds=late)) for _ in range(published)]
    with time_machine.travel(at, tick=False):
        metrics.record_published(ScheduledPing, rows, cutoff=at)  # outside a transaction: now
        for _ in range(handled):
            metrics.record_handled(ScheduledPing)
        for _ in range(failures):
            metrics.record_handle_failure(ScheduledPing, retried=False)


def record_an_hour() -> None:
    now = timezone.now()
    for ago in range(0, 24 * 60, 7):
        load = 5 + (ago * 37) % 23
        late = 0.2 + (ago % 11) / 4
        at = now - timedelta(minutes=ago)
        record_minute(at, published=load, handled=load - 1, failures=ago % 3 == 0, late=late)
