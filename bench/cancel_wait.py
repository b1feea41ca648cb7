"""Benchmark: how long a training_cancel waits while a batch of reminders is being pushed slowly.

    python -m bench.cancel_wait [--reminders 100] [--players 1] [--delay 0.2] [--cancels 12]

One batch message of N training reminders (one training and team each) is handled in a thread
by `trainings.send_training_reminders`, through a push backend that takes `--delay` seconds a
push (a provider answering well inside its timeout). Once its first push is out, `--cancels`
trainings spread over the batch are cancelled at once, each from a thread with its own
connection. Printed: how long the batch took, how long each cancel waited (median, max), and
how many pushes went out for a training after its cancel had returned (the promise: none).
Issue 40's finding: 100 reminders at 200 ms a push held every cancel for the whole batch.

Runs against a scratch database that Django's test machinery creates next to the configured
one (its name prefixed with "test_") and drops at the end; the configured database is never
written. No broker: the sweep publishes into memory, as `scheduling.delivery.testing` does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from bench.scratch import on_scratch_database

if TYPE_CHECKING:
    from trainings.models import Training
    from trainings.push import Push

BACKEND = "bench.cancel_wait.SlowPushBackend"


class SlowPushBackend:
    """Sends nothing; each push takes `delay` seconds, as a slow provider's answer would.

    Its state is on the class as the handler imports it (`BACKEND`): run as `python -m`, this
    file is also `__main__`, a second copy of the module."""

    delay = 0.2
    pushed: list[tuple[float, int]] = []  # (monotonic time, training pk) of every push
    lock = threading.Lock()

    def send(self, pushes: Sequence[Push]) -> None:
        for push in pushes:
            time.sleep(self.delay)
            with self.lock:
                self.pushed.append((time.monotonic(), push.training.pk))


def backend() -> type[SlowPushBackend]:
    from django.utils.module_loading import import_string

    found: type[SlowPushBackend] = import_string(BACKEND)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reminders", type=int, default=100)
    parser.add_argument("--players", type=int, default=1)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--cancels", type=int, default=12)
    args = parser.parse_args()
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_cancel_wait")
    on_scratch_database(lambda: run(args.reminders, args.players, args.cancels, args.delay))


def run(reminders: int, players: int, cancels: int, delay: float) -> None:
    from django.conf import settings

    settings.TRAININGS_PUSH_BACKEND = BACKEND
    backend().delay = delay
    trainings = make_trainings(reminders, players)
    batches = published(trainings)
    step = max(len(trainings) // cancels, 1)
    chosen = trainings[step - 1 :: step][:cancels]  # spread over the batch, the last included
    handler, batch_time = start_batches(batches)
    while not backend().pushed:
        if not handler.is_alive():
            raise RuntimeError(f"cancel_wait: the batch pushed nothing ({len(batches)} messages)")
        time.sleep(0.005)
    waits = cancel_all(chosen)
    handler.join()
    report(reminders, players, batch_time[0], waits)


def make_trainings(reminders: int, players: int) -> list[Training]:
    from django.utils import timezone

    from trainings.models import Player, Team
    from trainings.services import training_create

    start = timezone.now() + timedelta(hours=2)
    trainings = []
    for i in range(reminders):
        team = Team.objects.create(name=f"team {i}", quiet_hours=False)  # any hour of the day
        Player.objects.bulk_create(Player(team=team, name=f"p{j}") for j in range(players))
        at = start + timedelta(seconds=i)
        trainings.append(training_create(team=team, start_at=at, end_at=at + timedelta(hours=1)))
    return trainings


def published(trainings: list[Training]) -> list[list[dict[str, Any]]]:
    """The -90 minute reminders swept into memory: each message's events."""
    from scheduling.delivery.publishing.memory import MemoryPublisher
    from scheduling.delivery.sweep.run import sweep
    from scheduling.delivery.testing import events_of, in_process_lock
    from trainings.models import ScheduledTrainingNotification as Reminder

    publisher = MemoryPublisher()
    cutoff = trainings[-1].start_at - timedelta(minutes=89)
    sweep(Reminder, now=cutoff, publisher=publisher, lock=in_process_lock(Reminder))
    return [events_of(prepared.payload) for prepared in publisher.published]


def start_batches(batches: list[list[dict[str, Any]]]) -> tuple[threading.Thread, list[float]]:
    from django.db import connection

    from scheduling.delivery import metrics
    from trainings.tasks import send_training_reminder

    took = [0.0]

    def handle() -> None:
        started = time.monotonic()
        try:
            with metrics.not_recorded():
                for events in batches:
                    send_training_reminder(events)
        finally:
            took[0] = time.monotonic() - started
            connection.close()

    thread = threading.Thread(target=handle)
    thread.start()
    return thread, took


def cancel_all(trainings: list[Training]) -> dict[int, tuple[float, float]]:
    """Each training cancelled from a thread of its own, at once: {pk: (when it was asked,
    when it returned)}."""
    from django.db import connection

    from trainings.services import training_cancel

    waits: dict[int, tuple[float, float]] = {}

    def cancel(training: Training) -> None:
        started = time.monotonic()
        try:
            training_cancel(training=training)
            waits[training.pk] = (started, time.monotonic())
        finally:
            connection.close()

    threads = [threading.Thread(target=cancel, args=(t,)) for t in trainings]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return waits


def report(
    reminders: int, players: int, batch_seconds: float, waits: dict[int, tuple[float, float]]
) -> None:
    seconds = sorted(returned - asked for asked, returned in waits.values())
    pushed = backend().pushed
    asked = sum(1 for at, pk in pushed if pk in waits and at > waits[pk][0])
    late = sum(1 for at, pk in pushed if pk in waits and at > waits[pk][1])
    print(
        f"cancel_wait: a batch of {reminders} reminders x {players} player(s) at"
        f" {backend().delay * 1000:.0f} ms a push took {batch_seconds:.1f} s ({len(pushed)} pushes)"
    )
    print(
        f"  {len(waits)} concurrent cancels: waited median {statistics.median(seconds):.2f} s,"
        f" max {seconds[-1]:.2f} s; pushes for a cancelled training after its cancel was"
        f" asked: {asked} (its reminder under way then, at most), after it returned: {late}"
    )


if __name__ == "__main__":
    main()
