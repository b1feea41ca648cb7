"""reschedule: a bulk reschedule of 100k rows selected by a join, while sweeps keep delivering.

Runs on the large table the scale scenario leaves: 100 teams, one training each, with
rows_per_team pending rows. One team's rows are moved by training__team; meanwhile a sweeping
thread drains due rows of other teams, and we count what it delivered during the move.
"""

import threading
import time
from datetime import timedelta

from django.db import connection, transaction

from bench.common import broker, record, sql, vacuum
from scheduling.dispatch import sweep
from trainings.models import ScheduledTrainingNotification, Team

MODEL = ScheduledTrainingNotification


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
    teams = list(Team.objects.order_by("pk")[:3])
    target, busy = teams[0], teams[1:]
    selected = MODEL.objects.filter(training__team=target).pending()
    count = selected.count()
    print(f"reschedule: shift {count:,} rows selected by training__team, sweeps running")
    make_backlog_due(busy, 150_000)
    sweeper = Sweeper()
    sweeper.start()
    time.sleep(1)  # the sweeper is in its stride
    started = time.perf_counter()
    moved = MODEL.objects.filter(training__team=target).shift(timedelta(hours=2))
    ended = time.perf_counter()
    time.sleep(0.5)
    sweeper.stop.set()
    sweeper.join(30)
    broker().flushdb()
    during = sweeper.delivered_between(started, ended)
    record("reschedule", f"bulk shift of {moved:,} rows by a join", ended - started, "s")
    record(
        "reschedule", "sweep throughput during the shift", during / (ended - started), "events/s"
    )
    record("reschedule", "the same shift with jit off", shift_without_jit(target), "s")


def shift_without_jit(team: Team) -> float:
    """PostgreSQL compiles expensive plans (JIT) by default; a bulk UPDATE's estimate often is."""
    with transaction.atomic():
        sql("SET LOCAL jit = off")
        started = time.perf_counter()
        MODEL.objects.filter(training__team=team).shift(timedelta(hours=-2))
        return time.perf_counter() - started
