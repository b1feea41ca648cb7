"""Benchmark: create 10k trainings (220k scheduled rows) and move 1k of them.

    DJANGO_SETTINGS_MODULE=project.settings python -m bench.trainings [--trainings N] [--moves M]

Runs against a scratch database that Django's test machinery creates next to the configured
one (its name prefixed with "test_") and drops at the end; the configured database is never
written. Prints a small report.
"""

import argparse
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from bench.common import timed
from bench.scratch import on_scratch_database

if TYPE_CHECKING:
    from trainings.models import Team


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trainings", type=int, default=10_000)
    parser.add_argument("--moves", type=int, default=1_000)
    parser.add_argument("--players", type=int, default=20)
    args = parser.parse_args()
    on_scratch_database(lambda: run(args.trainings, args.moves, args.players))


def run(trainings: int, moves: int, players: int) -> None:
    from django.db import connection
    from django.utils import timezone

    first = timezone.now() + timedelta(days=4)
    times = [
        (first + timedelta(minutes=10 * i), first + timedelta(minutes=10 * i + 90))
        for i in range(trainings)
    ]
    team = time_creations(times, players)
    # A freshly bulk-loaded table has no planner statistics until autovacuum analyses it;
    # without them the moves' lookups by training can pick poor plans, so analyse as it would.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    time_moves(team, moves)


def new_team(name: str, players: int) -> "Team":
    from trainings.models import Player, Team

    team = Team.objects.create(name=name)
    Player.objects.bulk_create(Player(team=team, name=f"p{i}") for i in range(players))
    return team


def time_creations(times: list[tuple[datetime, datetime]], players: int) -> "Team":
    """One team's trainings created one call each, another's in one call; the second team."""
    from trainings.services import training_create, training_create_many

    team = new_team("one call per training", players)
    with timed() as elapsed:
        for start_at, end_at in times:
            training_create(team=team, start_at=start_at, end_at=end_at, invitations_enabled=True)
    report("training_create x", len(times), team, elapsed[0])

    team = new_team("one call", players)
    with timed() as elapsed:
        training_create_many(team=team, times=times, invitations_enabled=True)
    report("training_create_many,", len(times), team, elapsed[0])
    return team


def time_moves(team: "Team", moves: int) -> None:
    from trainings.models import ScheduledTrainingNotification, Training
    from trainings.services import training_move

    chosen = list(Training.objects.filter(team=team).order_by("pk")[:moves])
    with timed() as elapsed:
        moved = sum(
            training_move(
                training=t,
                start_at=t.start_at + timedelta(hours=1),
                end_at=t.end_at + timedelta(hours=1),
            )
            for t in chosen
        )
    seconds = elapsed[0]
    print(
        f"training_move x {moves}: {moved} pending rows moved in {seconds:.1f}s "
        f"({1000 * seconds / max(moves, 1):.1f} ms per training)"
    )
    total = ScheduledTrainingNotification.objects.count()
    print(f"({total} scheduled rows in the table at the end)")


def report(label: str, trainings: int, team: Any, seconds: float) -> None:
    from trainings.models import ScheduledTrainingNotification

    rows = ScheduledTrainingNotification.objects.filter(training__team=team).count()
    print(
        f"{label} {trainings} trainings: {rows} scheduled rows in {seconds:.1f}s "
        f"({trainings / seconds:.0f} trainings/s, {rows / seconds:.0f} rows/s)"
    )


if __name__ == "__main__":
    main()
