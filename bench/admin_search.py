"""Benchmark: the scheduled models' admin search over 200,000 rows each (issue #40, item 7).

    python -m bench.admin_search [--rows N] [--concurrency C]

Creates N pending scheduled purchases (one customer each, 1,000 releases) and N training
reminders (1,000 teams of 20 players), then runs C concurrent admin searches of each changelist
(a superuser, Django's test client, one thread and database connection each) while one thread
times an unrelated API request (`GET /api/teams/`) over and over. Prints each search's time, the
slowest unrelated request, and the statuses. Runs on a database of its own
(scheduling_admin_search_bench), created and filled on the first run and kept for the next
(`--drop` drops it at the end); no other database is written.
"""

import argparse
import os
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import django
from django.core.management import call_command

BATCH = 10_000
TEAMS, PLAYERS = 1000, 20
SEARCHES = {
    "purchases: a customer's email": (
        "/admin/purchases/scheduledpurchase/",
        "customer-123457@example.com",
    ),
    "purchases: a release title": ("/admin/purchases/scheduledpurchase/", "Album 512"),
    "trainings: a team's name": ("/admin/trainings/scheduledtrainingnotification/", "team 77"),
    "trainings: a player's name": (
        "/admin/trainings/scheduledtrainingnotification/",
        "player 77-5",
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--concurrency", type=int, default=12)
    parser.add_argument("--drop", action="store_true", help="drop the database at the end")
    args = parser.parse_args()
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/")
    os.environ["DATABASE_URL"] = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + (
        "/scheduling_admin_search_bench"
    )
    os.environ.setdefault("REDIS_URL", "")  # locmem cache: the bench needs no Redis
    os.environ.setdefault("CELERY_BROKER_URL", "memory://")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    django.setup()
    from django.db import connection

    name = connection.settings_dict["NAME"]
    database_statement(f"CREATE DATABASE {name}", unless_exists=name)
    call_command("migrate", verbosity=0)
    try:
        run(args.rows, args.concurrency)
    finally:
        connection.close()
        if args.drop:
            database_statement(f"DROP DATABASE {name}")


def database_statement(statement: str, unless_exists: str = "") -> None:
    """CREATE or DROP DATABASE, from the server's maintenance database."""
    from django.db import connection

    with connection._nodb_cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [unless_exists])
        if not (unless_exists and cursor.fetchone()):
            cursor.execute(statement)


def run(rows: int, concurrency: int) -> None:
    from django.db import connection

    from purchases.models import ScheduledPurchase

    if not ScheduledPurchase.objects.exists():
        started = time.perf_counter()
        make_purchases(rows)
        make_trainings(rows)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")  # as autovacuum would after a bulk load
        print(f"{rows:,} rows per model made in {time.perf_counter() - started:.0f} s")
    user = superuser()
    for label, (url, term) in SEARCHES.items():
        measure(label, url, term, user, concurrency)


def make_purchases(rows: int) -> None:
    from django.utils import timezone

    from purchases.models import Account, Artist, Customer, Purchase, Release, ScheduledPurchase

    due = timezone.now() + timedelta(days=30)
    artist = Artist.objects.create(name="artist", account=Account.objects.create(name="label"))
    releases = Release.objects.bulk_create(
        Release(artist=artist, title=f"Album {n}", release_date=due) for n in range(1000)
    )
    for start in range(0, rows, BATCH):
        numbers = range(start, min(start + BATCH, rows))
        customers = Customer.objects.bulk_create(
            Customer(email=f"customer-{n}@example.com", name=f"Customer {n}") for n in numbers
        )
        purchases = Purchase.objects.bulk_create(
            Purchase(customer=customer, release=releases[n % len(releases)])
            for n, customer in zip(numbers, customers, strict=True)
        )
        ScheduledPurchase.objects.bulk_create(
            ScheduledPurchase(purchase=purchase, due_at=due) for purchase in purchases
        )


def make_trainings(rows: int) -> None:
    from django.utils import timezone

    from trainings.models import Player, ScheduledTrainingNotification, Team, Training

    start = timezone.now() + timedelta(days=30)
    teams = Team.objects.bulk_create(
        Team(name=f"team {t}", quiet_hours=False) for t in range(TEAMS)
    )
    Player.objects.bulk_create(
        Player(team=team, name=f"player {t}-{p}")
        for t, team in enumerate(teams)
        for p in range(PLAYERS)
    )
    rungs = 10
    trainings = Training.objects.bulk_create(
        Training(team=teams[n % TEAMS], start_at=start, end_at=start + timedelta(hours=2))
        for n in range(rows // rungs)
    )
    for first in range(0, len(trainings), BATCH // rungs):
        ScheduledTrainingNotification.objects.bulk_create(
            ScheduledTrainingNotification(
                training=training,
                kind="pre_training",
                offset=timedelta(minutes=-15 * (rung + 1)),
                due_at=start - timedelta(minutes=15 * (rung + 1)),
            )
            for training in trainings[first : first + BATCH // rungs]
            for rung in range(rungs)
        )


def superuser() -> Any:
    from django.contrib.auth.models import User

    user = User.objects.filter(username="bench-admin-search").first()
    return user or User.objects.create_superuser("bench-admin-search", "", "bench-password")


def measure(label: str, url: str, term: str, user: Any, concurrency: int) -> None:
    """`concurrency` searches at once, and the unrelated request timed meanwhile."""
    stop = threading.Event()
    unrelated: list[float] = []
    watcher = threading.Thread(target=time_unrelated, args=(user, stop, unrelated))
    watcher.start()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        answers = list(pool.map(lambda _: timed_get(user, url, {"q": term}), range(concurrency)))
    stop.set()
    watcher.join()
    times = sorted(seconds for seconds, _ in answers)
    statuses = sorted({status for _, status in answers})
    print(
        f"{label} ({term!r}): {concurrency} at once, each {times[0]:.2f}-{times[-1]:.2f} s"
        f" (median {statistics.median(times):.2f} s), statuses {statuses};"
        f" unrelated GET /api/teams/ slowest {max(unrelated, default=0):.2f} s"
        f" of {len(unrelated)}",
        flush=True,
    )


def time_unrelated(user: Any, stop: threading.Event, times: list[float]) -> None:
    while not stop.is_set():
        times.append(timed_get(user, "/api/teams/", {})[0])
        stop.wait(0.2)


def timed_get(user: Any, url: str, params: dict[str, str]) -> tuple[float, int]:
    from django.db import connection
    from django.test import Client

    client = Client()
    client.force_login(user)
    started = time.perf_counter()
    try:
        status = request(lambda: client.get(url, params))
    finally:
        connection.close()  # each thread's own connection
    return time.perf_counter() - started, status


def request(call: Callable[[], Any]) -> int:
    return int(call().status_code)


if __name__ == "__main__":
    main()
