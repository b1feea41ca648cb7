"""PUTs and PATCHes racing each other and the sweep, on separate database connections."""

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models.functions import Now
from django.utils import timezone

from scheduling.delivery.sweep.run import sweep
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.jobs.services import job_put
from scheduling.time.times import iso_utc
from tests.conftest import wait_for
from tests.scheduling.jobs.conftest import JOBS, put_job
from tests.scheduling.recurring.conftest import json_bodies
from tests.scheduling.recurring.test_schedule_races import GatedPublisher, waiting_on_a_lock

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


def test_a_patch_waits_for_a_sweep_publishing_a_run_and_answers_what_was_published(api, broker):
    put_job(api, "k", schedules=[iso_utc(timezone.now() - timedelta(seconds=5))], payload={"v": 1})
    publisher = GatedPublisher()
    sweeper, swept = in_thread(lambda: sweep(ScheduledJobRun, publisher=publisher))
    assert publisher.entered.wait(30), "the sweep should claim the due run"

    patcher, answers = in_thread(
        lambda: api.patch(f"{JOBS}k/", {"payload": {"v": 2}}, format="json")
    )
    wait_for(lambda: waiting_on_a_lock() >= 1, timeout=30, interval=0.05)
    assert patcher.is_alive(), "the PATCH should wait for the sweep's row lock"
    publisher.gate.set()
    sweeper.join(30)
    patcher.join(30)

    assert swept[0].delivered == 1
    assert [body["payload"] for body in json_bodies(broker, "reminders")] == [{"v": 1}]
    answer = answers[0].json()
    assert answer["payload"] == {"v": 2}
    assert [run["status"] for run in answer["runs"]] == ["delivered"]
    assert answer["schedules"] == []


def test_a_sweep_after_a_patch_publishes_the_new_payload(api, broker):
    put_job(api, "k", schedules=[iso_utc(timezone.now() - timedelta(seconds=5))], payload={"v": 1})
    patched = api.patch(f"{JOBS}k/", {"payload": {"v": 2}}, format="json")

    assert sweep(ScheduledJobRun).delivered == 1

    assert patched.json()["schedules"] == [patched.json()["runs"][0]["due_at"]]
    assert [body["payload"] for body in json_bodies(broker, "reminders")] == [{"v": 2}]
