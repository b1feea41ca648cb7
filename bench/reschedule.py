"""reschedule: a bulk reschedule of 100k rows selected by a join, while sweeps keep delivering.

Runs on the large table the scale scenario leaves: 100 teams of 100k pending rows each, in
trainings of 20 rows, interleaved as an application creates them. Each move runs while a
sweeping thread drains due rows of other teams (we count what it delivered meanwhile):
- one team's rows, by training__team, with PostgreSQL's defaults;
- the same rows with `random_page_cost = 1.1` (SSD): the planner then walks the index from the
  team's trainings instead of scanning all 10M rows;
- the same with `wal_compression = lz4` as well;
- one rung of 20 teams' trainings (training__team__in and offset), 100k rows about one a page,
  the worst case for the disk, with both settings.
Each move starts after a CHECKPOINT, so every page it touches is first written in full to the
WAL (`full_page_writes`), as it would be in production; without it a repeat would look cheaper.
"""

import itertools
import threading
import time
from datetime import timedelta

from django.db import connection, transaction

from bench.common import broker, record, sql, vacuum
from scheduling.models import ScheduledEventQuerySet
from scheduling.sweep import sweep
from trainings.models import ScheduledTrainingNotification, Team

MODEL = ScheduledTrainingNotification
DIRECTION = itertools.cycle([1, -1])


class Sweeper(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.delivered: list[tuple[float, int]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                result = sweep(MODEL, time_budget=0.5)
                self.delivered.append((time.perf_counter(), result.delivered))
        finally:
            connection.close()

    def delivered_between(self, start: float, end: float) -> int:
        return sum(count for at, count in self.delivered if start <= at <= end)


def make_backlog_due(teams: list[Team], rows: int) -> None:
    sql(
        "UPDATE scheduled_training_notification SET due_at = now() - interval '1 second'"
        " WHERE id IN (SELECT n.id FROM scheduled_training_notification n"
        " JOIN trainings_training t ON t.id = n.training_id WHERE t.team_id = ANY(%s) LIMIT %s)",
        [[team.pk for team in teams], rows],
    )
    vacuum("scheduled_training_notification")


def run_reschedule() -> None:
    teams = list(Team.objects.order_by("pk"))
    make_backlog_due(teams[-10:], 500_000)  # what the sweeper delivers during the moves
    one_team = MODEL.objects.filter(training__team=teams[0])
    one_rung = MODEL.objects.filter(training__team__in=teams[1:21], offset=timedelta(seconds=5))
    print(f"reschedule: shift {one_team.count():,} and {one_rung.count():,} rows, sweeps running")
    ssd = {"random_page_cost": "1.1"}
    tuned = {**ssd, "wal_compression": "lz4"}
    measure_shift("one team, defaults", one_team, {})
    measure_shift("one team, random_page_cost 1.1", one_team, ssd)
    measure_shift("one team, + wal_compression lz4", one_team, tuned)
    measure_shift("one rung of 20 teams, both settings", one_rung, tuned)
    broker().flushdb()


def measure_shift(
    label: str,
    selected: ScheduledEventQuerySet[ScheduledTrainingNotification],
    settings: dict[str, str],
) -> None:
    """Move `selected` by two hours, back and forth on each call, while a sweeper runs."""
    sql("CHECKPOINT")
    sweeper = Sweeper()
    sweeper.start()
    time.sleep(1)  # the sweeper is in its stride
    with transaction.atomic():
        for name, value in settings.items():  # production sets these server-wide
            sql(f"SET LOCAL {name} = {value}")
        started = time.perf_counter()
        moved = selected.pending().shift(timedelta(hours=2 * next(DIRECTION)))
    ended = time.perf_counter()  # committed
    time.sleep(0.5)
    sweeper.stop.set()
    sweeper.join(30)
    during = sweeper.delivered_between(started, ended)
    record("reschedule", f"shift {moved:,} rows: {label}", ended - started, "s")
    record("reschedule", "  sweep throughput meanwhile", during / (ended - started), "events/s")
