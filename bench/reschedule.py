"""reschedule: a bulk reschedule of 100k rows selected by a join, while sweeps keep delivering.

Runs on the large table the scale scenario leaves: 100 teams of 100k pending rows each, in
trainings of 20 rows, interleaved as an application creates them. Each move runs while a
sweeping thread drains due rows of other teams (we count what it delivered meanwhile):
- one team's rows, by training__team, with PostgreSQL's defaults (the headline figure), and
  `training_id` analysed with the statistics target of 1000 that trainings' migration 0008
  sets;
- the same with the default target (100) for comparison: its sample meets few of the
  trainings, as a training's rows share pages, so the planner expects several times the rows a
  training has and scans the whole table rather than walk the index from the team's trainings
  (docs/benchmarks.md); the migration's target is put back afterwards;
- the same rows with `random_page_cost = 1.1` (SSD): the index walk then wins even with the
  sampled count;
- the same with `wal_compression = lz4` as well;
- the floor: the same move as one hand-written `UPDATE … FROM trainings_training`, both
  settings (the ORM's UPDATE selects the rows by `id = ANY(ARRAY(subquery))`);
- the way an ORM user writes it without `shift`: `for row in qs: row.due_at += delta;
  row.save()`, timed on a sample and extrapolated to the 100k rows;
- one rung of 20 teams' trainings (training__team__in and offset), 100k rows about one a page,
  the worst case for the disk, with both settings.
Each move starts after a CHECKPOINT, so every page it touches is first written in full to the
WAL (`full_page_writes`), as it would be in production; without it a repeat would look cheaper.
"""

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from django.db import connection, transaction

from bench.anchors import record_against
from bench.common import broker, record, sql, vacuum
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.querysets import ScheduledEventQuerySet
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


TARGET_SECONDS = 2.0  # issue #17: 100k rows on a 10M table
SAMPLE = 2000  # rows the per-row way moves, one save() each


@dataclass(frozen=True)
class Moves:
    """Seconds each way took to shift one team's rows."""

    defaults: float
    both_settings: float  # random_page_cost 1.1 and wal_compression lz4
    floor: float  # the hand-written UPDATE … FROM
    per_row: float  # extrapolated


def run_reschedule(sample: int = SAMPLE) -> None:
    teams = list(Team.objects.order_by("pk"))
    make_backlog_due(teams[-10:], 500_000)  # what the sweeper delivers during the moves
    one_team = MODEL.objects.filter(training__team=teams[0])
    one_rung = MODEL.objects.filter(training__team__in=teams[1:21], offset=timedelta(seconds=5))
    print(f"reschedule: shift {one_team.count():,} and {one_rung.count():,} rows, sweeps running")
    moves = measure_moves(teams[0], one_team, sample)
    measure("one rung of 20 teams, both settings", lambda: shifted(one_rung), TUNED)
    record_moves(moves)
    broker().flushdb()


SSD = {"random_page_cost": "1.1"}
TUNED = {**SSD, "wal_compression": "lz4"}


def measure_moves(
    team: Team, one_team: ScheduledEventQuerySet[ScheduledTrainingNotification], sample: int
) -> Moves:
    defaults = measure("one team, defaults", lambda: shifted(one_team), {})
    with training_id_statistics(-1):
        measure("one team, defaults, statistics target 100", lambda: shifted(one_team), {})
    measure("one team, random_page_cost 1.1", lambda: shifted(one_team), SSD)
    best = measure("one team, + wal_compression lz4", lambda: shifted(one_team), TUNED)
    floor = measure("one team, raw SQL UPDATE … FROM", lambda: raw_shift(team), TUNED)
    return Moves(defaults, best, floor, measure_per_row(one_team, sample))


def record_moves(moves: Moves) -> None:
    for label, seconds in (
        ("shift of one team (defaults)", moves.defaults),
        ("shift of one team (both settings)", moves.both_settings),
    ):
        record_against(
            "reschedule",
            label,
            seconds,
            "s",
            anchor=TARGET_SECONDS,
            anchor_label="target",
            lower_is_better=True,
        )
    record_against(
        "reschedule",
        "ORM shift (both settings)",
        moves.both_settings,
        "s",
        anchor=moves.floor,
        anchor_label="the floor: raw SQL UPDATE … FROM",
        lower_is_better=True,
        goal=False,
    )
    record_against(
        "reschedule",
        "per-row save() (extrapolated)",
        moves.per_row,
        "s",
        anchor=moves.both_settings,
        anchor_label="ORM shift (both settings)",
        lower_is_better=True,
        goal=False,
    )


@contextmanager
def training_id_statistics(target: int) -> Iterator[None]:
    """ANALYZE reads `training_id` with this statistics target (-1: the server's default);
    with migration 0008's target afterwards."""
    analyze_training_id(target)
    try:
        yield
    finally:
        analyze_training_id(1000)


def analyze_training_id(target: int) -> None:
    table = MODEL._meta.db_table
    sql(f"ALTER TABLE {table} ALTER COLUMN training_id SET STATISTICS {target}")
    sql(f"ANALYZE {table} (training_id)")


def shifted(selected: ScheduledEventQuerySet[ScheduledTrainingNotification]) -> int:
    return selected.pending().shift(timedelta(hours=2 * next(DIRECTION)))


def raw_shift(team: Team) -> int:
    """The same move written by hand: one UPDATE joined to the trainings, no self-join."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE scheduled_training_notification n"
            " SET due_at = n.due_at + %s::interval, version = n.version + 1, updated_at = now()"
            " FROM trainings_training t"
            " WHERE t.id = n.training_id AND t.team_id = %s AND n.status = 'pending'",
            [f"{2 * next(DIRECTION)} hours", team.pk],
        )
        return cursor.rowcount


def measure(label: str, move: Callable[[], int], settings: dict[str, str]) -> float:
    """Run `move` after a checkpoint, in one transaction, while a sweeper runs; its seconds."""
    sql("CHECKPOINT")
    sweeper = Sweeper()
    sweeper.start()
    time.sleep(1)  # the sweeper is in its stride
    with transaction.atomic():
        for name, value in settings.items():  # production sets these server-wide
            sql(f"SET LOCAL {name} = {value}")
        started = time.perf_counter()
        moved = move()
    ended = time.perf_counter()  # committed
    time.sleep(0.5)
    sweeper.stop.set()
    sweeper.join(30)
    during = sweeper.delivered_between(started, ended)
    record("reschedule", f"shift {moved:,} rows: {label}", ended - started, "s")
    record("reschedule", "  sweep throughput meanwhile", during / (ended - started), "events/s")
    return ended - started


def measure_per_row(
    selected: ScheduledEventQuerySet[ScheduledTrainingNotification], sample: int
) -> float:
    """`for row in qs: row.due_at = …; row.save()` on `sample` rows (each save its own
    autocommit transaction, as a script or a shell session runs it), extrapolated."""
    total = selected.pending().count()
    sql("CHECKPOINT")
    started = time.perf_counter()
    for row in selected.pending()[:sample]:
        row.due_at = row.due_at + timedelta(minutes=1)
        row.save()
    elapsed = time.perf_counter() - started
    estimate = elapsed / sample * total
    record(
        "reschedule",
        f"per-row save() of {total:,} rows (from {sample:,})",
        estimate,
        "s",
        sample_seconds=elapsed,
    )
    return estimate
