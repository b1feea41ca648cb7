"""PUTs racing each other and the sweep, on separate database connections."""

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models.functions import Now

from scheduling.jobs import Job, ScheduledJobRun, job_put

pytestmark = pytest.mark.django_db(transaction=True)

Status = ScheduledJobRun.Status
T1 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
T2 = T1 + timedelta(hours=1)
QUEUE = {"type": "queue", "queue": "reminders"}


def put(schedules: list[datetime]) -> tuple[Job, bool]:
    return job_put(key="k", schedules=schedules, callback=QUEUE, payload={}, labels={})


def in_thread(target: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    results: list[Any] = []

    def run() -> None:
        try:
            results.append(target())
        except Exception as exc:  # reported by the test, not lost in the thread
            results.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, results


def test_concurrent_puts_of_a_new_key_create_it_once_and_both_succeed():
    barrier = threading.Barrier(2)

    def racer() -> bool:
        barrier.wait()
        return put([T1, T2])[1]

    threads = [in_thread(racer) for _ in range(2)]
    for thread, _ in threads:
        thread.join(timeout=30)

    outcomes = sorted(results[0] for _, results in threads)
    assert outcomes == [False, True]
    assert sorted(Job.objects.get().runs.pending().values_list("due_at", flat=True)) == [T1, T2]


def test_a_put_waits_for_a_sweep_holding_a_run_and_does_not_schedule_it_again():
    job, _ = put([T1, T2])
    claimed, release = threading.Event(), threading.Event()

    def sweep_like() -> None:
        # What the sweep does to a due row: lock it, publish, mark it delivered, commit.
        with transaction.atomic():
            run = ScheduledJobRun.objects.select_for_update().get(job=job, due_at=T1)
            ScheduledJobRun.objects.filter(pk=run.pk).update(
                status=Status.DELIVERED, delivered_at=Now()
            )
            claimed.set()
            release.wait(timeout=30)

    sweeper, _ = in_thread(sweep_like)
    assert claimed.wait(timeout=30)
    putter, results = in_thread(lambda: put([T1, T2]))
    putter.join(timeout=1)
    assert putter.is_alive(), "the PUT should wait for the sweep's row lock"
    release.set()
    sweeper.join(timeout=30)
    putter.join(timeout=30)

    assert results == [(job, False)]
    rows = job.runs.order_by("due_at").values_list("due_at", "status")
    assert list(rows) == [(T1, Status.DELIVERED), (T2, Status.PENDING)]
