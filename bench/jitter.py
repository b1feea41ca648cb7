"""jitter: the burst of schedules sharing a cron, with and without jitter.

N every-minute schedules (cron `* * * * *`, the whole-minute crowd) fire at one minute; one
sweep publishes them and inserts each one's next occurrence through the real chain step, which
applies the schedule's jitter. The next minute's due times are then counted per second (the
burst's peak), and drained by one sweep a second, as beat ticks, counting what each publishes
and how long it takes. Run: `python -m bench.jitter [N] [JITTER]` (default 10000 and 60), on
bench.recurring's own database and a claimed Redis pair.
"""

import sys
import time
from collections import Counter
from datetime import datetime, timedelta

from bench.recurring import QUEUE, configure, make_schedules

SECOND = timedelta(seconds=1)


def due_per_second(planned: datetime) -> Counter[int]:
    """The pending occurrences planned at `planned`, by the second they are due in, counted
    from it; none before it."""
    from scheduling.recurring.models import ScheduledOccurrence

    rows = ScheduledOccurrence.objects.filter(status="pending").values_list(
        "due_at", "business_due_at"
    )
    counts: Counter[int] = Counter()
    for due_at, business in rows:
        assert (business or due_at) == planned, "each successor keeps its planned time"
        assert due_at >= planned, "never due before its planned time"
        counts[int((due_at - planned) / SECOND)] += 1
    return counts


def drain(planned: datetime, seconds: int) -> tuple[Counter[int], float]:
    """One sweep a second from `planned` on, as beat ticks; what each published, and the
    longest sweep in seconds."""
    from bench.common import broker
    from scheduling.delivery.sweep.run import sweep
    from scheduling.recurring.models import ScheduledOccurrence

    published: Counter[int] = Counter()
    longest = 0.0
    for second in range(seconds + 1):
        started = time.perf_counter()
        result = sweep(ScheduledOccurrence, now=planned + second * SECOND, time_budget=3600)
        longest = max(longest, time.perf_counter() - started)
        published[second] = result.delivered
        broker().delete(QUEUE)  # consumed: the queue's backlog cap never holds the sweep back
    return published, longest


def run(count: int, jitter: int) -> None:
    from bench.common import broker
    from scheduling.delivery.sweep.run import sweep
    from scheduling.recurring.models import ScheduledOccurrence

    broker().delete(QUEUE)
    minute = make_schedules(count, task=False, jitter=jitter)
    # The first fire is due at the minute for all (inserted in SQL): its sweep chains the next.
    assert sweep(ScheduledOccurrence, now=minute, time_budget=3600).delivered == count
    broker().delete(QUEUE)
    planned = minute + timedelta(minutes=1)
    due = due_per_second(planned)
    published, longest = drain(planned, max(jitter, 1))
    assert sum(published.values()) == count, published
    print(
        f"  {count:>7,} schedules, jitter {jitter:>2} s: due over {len(due):>2} s, peak "
        f"{max(due.values()):>6,} due in one second; drained one sweep a second: peak "
        f"{max(published.values()):>6,} published in one, longest sweep {longest:.2f} s"
    )


def main(argv: list[str]) -> None:
    configure()
    from bench.database import prepare_database

    prepare_database()
    from tests.settings import release_redis_pair

    count = int(argv[0]) if argv else 10_000
    jitter = int(argv[1]) if len(argv) > 1 else 60
    try:
        for value in (0, jitter):
            run(count, value)
    finally:
        release_redis_pair()


if __name__ == "__main__":
    main(sys.argv[1:])
