"""history: a burst of training reminders handled by real workers, without and with failures.

N reminders fall due together; real `celery beat`, a sweeping worker (`-Q scheduling`) and a
handling worker (`-Q trainings`) deliver and handle them end to end. The second run makes 10%
of them fail once (the push backend below raises on their first try): the worker records the
failure and the row's history, the sweep publishes them again after the backoff, and the next
try succeeds. Printed: events/s end to end for both runs, the EventHistory entries written per
event and per failing event, and the time the failures added.
"""

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

from bench.common import broker, make_notification_rows, record, sql
from bench.lateness import start
from scheduling.rows.history.models import EventHistory
from scheduling.rows.registry import scheduled_models
from trainings.models import ScheduledTrainingNotification as Reminder
from trainings.push.backends import Push, RecordingPushBackend

FAIL_EVERY = 10  # one reminder in ten fails its first try
LEAD_SECONDS = 8  # the burst falls due after beat and the workers are up
BACKOFF = 1.0  # SCHEDULING_RETRY_BACKOFF of the run: the failing tries wait 0.5-1 s
RUN_ENV = "BENCH_HISTORY_RUN"  # names the run in the workers, so a failure is once per run
FAIL_ENV = "BENCH_HISTORY_FAIL_EVERY"


class FailingOncePushBackend(RecordingPushBackend):
    """The recording backend, except that every FAIL_EVERY-th reminder (by its row's pk)
    fails its first try, as a push service that is briefly down."""

    def send(self, pushes: Sequence[Push]) -> None:
        every = int(os.environ.get(FAIL_ENV, "0"))
        if pushes and every and first_try_fails(pushes[0].event_id, every):
            raise ConnectionError("bench: the push service failed this try")
        super().send(pushes)


def first_try_fails(event_id: str, every: int) -> bool:
    pk = int(event_id.split(":")[1])  # app_label.model:pk:vN
    key = f"bench:history:{os.environ.get(RUN_ENV, '')}:{event_id}"
    return pk % every == 0 and bool(cache.add(key, 1, 3600))  # atomic: once per run


@dataclass
class Run:
    events: int
    failing: int
    seconds: float
    entries: int


def run_history(events: int) -> None:
    print(
        f"history: {events:,} reminders falling due at once; beat + sweeping and handling workers"
    )
    os.environ.update(
        TRAININGS_PUSH_BACKEND="bench.history.FailingOncePushBackend",
        SCHEDULING_RETRY_BACKOFF=str(BACKOFF),
    )
    smooth = burst(events, fail_every=0)
    report("no failures", smooth)
    failing = burst(events, fail_every=FAIL_EVERY)
    report(f"1 in {FAIL_EVERY} failing once", failing)
    extra = failing.seconds - smooth.seconds
    record("history", "extra time with the failures", extra, "s", backoff=BACKOFF)
    if failing.failing:
        record("history", "  extra time per failing event", 1000 * extra / failing.failing, "ms")


def burst(events: int, *, fail_every: int) -> Run:
    teams = max(events // 20, 1)  # a training's 20 rungs a team, one player each
    make_notification_rows(teams=teams, rows_per_team=20, due_in=f"{LEAD_SECONDS} seconds")
    sql(
        "INSERT INTO trainings_player (team_id, name, push_token) SELECT id, 'p', '' FROM trainings_team"
    )
    others = [model._meta.db_table for model in scheduled_models() if model is not Reminder]
    # Alone: other scenarios' rows (delivered, never handled) would keep the sweeps busy.
    sql(f"TRUNCATE scheduling_event_history, {', '.join(others)} CASCADE")
    broker().flushdb()
    os.environ.update({FAIL_ENV: str(fail_every), RUN_ENV: str(time.time_ns())})
    total = Reminder.objects.count()
    settings.RUN_DIR.mkdir(parents=True, exist_ok=True)
    schedule = str(settings.RUN_DIR / "bench-celerybeat-schedule")
    processes = [
        start(0.0, "beat", "-s", schedule),
        start(0.0, "worker", "-Q", "scheduling", "-c", "1", "-n", "sweeps@%h"),
        start(0.0, "worker", "-Q", "trainings", "-c", "2", "-n", "handlers@%h"),
    ]
    try:
        seconds = time_until_handled(total)
    finally:
        for process in processes:
            process.terminate()
            process.wait(30)
    failing = total // fail_every if fail_every else 0
    return Run(total, failing, seconds, EventHistory.objects.count())


def time_until_handled(total: int) -> float:
    """Seconds from the burst's due time until every row is handled."""
    rows = Reminder.objects
    due = rows.order_by("due_at").values_list("due_at", flat=True).first()
    assert due is not None
    time.sleep(max(due.timestamp() - time.time(), 0.0))
    started = time.monotonic()
    deadline = started + 120 + total / 20
    unhandled = rows.filter(handled_at__isnull=True)
    while unhandled.exists():
        assert time.monotonic() < deadline, f"{unhandled.count()} of {total} never handled"
        time.sleep(0.5)
    return time.monotonic() - started


def report(variant: str, run: Run) -> None:
    record("history", f"{variant}: events/s end to end", run.events / run.seconds, "events/s")
    record("history", f"{variant}: seconds", run.seconds, "s", events=run.events)
    record("history", f"{variant}: history entries per event", run.entries / run.events, "x")
    if run.failing:
        per_failing = run.entries / run.failing
        record("history", f"{variant}: entries per failing event", per_failing, "x")
