"""The pause across processes, driven through the two commands: a paused model publishes
nothing, within a tick of the pause, while another model goes on; resuming publishes its
backlog. Two `sweep --loop` daemons, then Celery beat with a worker running its sweeps."""

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from tests.conftest import manage, queued_task_ids, start_beat, start_worker, stop_process, wait_for
from tests.factories import make_due_notices, make_due_pings
from tests.testapp.models import ScheduledPing

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PING, NOTICE = "testapp.ScheduledPing", "testapp.ScheduledNotice"
TICK = 0.2  # SCHEDULING_SWEEP_INTERVAL of every process below
QUIET = 10 * TICK  # how long a paused model is watched publishing nothing


def command(env: dict[str, str], *args: str) -> str:
    process = manage(env, *args)
    output = process.communicate(timeout=60)[0]
    assert process.returncode == 0, output
    return output


def ping_ids() -> set[str]:
    return {row.event_id for row in ScheduledPing.objects.all()}


def pending_due_times() -> dict[int, object]:
    pending = ScheduledPing.objects.filter(status=ScheduledPing.Status.PENDING)
    return dict(pending.values_list("pk", "due_at"))


def pause_holds_then_resume_publishes(env: dict[str, str], broker) -> None:
    """With sweepers running: a first backlog goes out, the pause stops the next one while
    notices go on, and resuming publishes it."""
    make_due_pings(5, group="before")
    wait_for(lambda: broker.llen("testapp") == 5)

    output = command(env, "scheduling_pause", PING, "--reason", "provider down")
    assert output.startswith(f"{PING}: paused by command:"), output
    time.sleep(2 * TICK)  # a sweep that began before the pause ends within its tick
    make_due_pings(20, group="paused")
    held = pending_due_times()
    make_due_notices(5)
    wait_for(lambda: broker.llen("notices") == 5)  # the other model goes on
    time.sleep(QUIET)

    assert broker.llen("testapp") == 5
    assert pending_due_times() == held  # pending, due times untouched
    assert len(held) == 20

    assert command(env, "scheduling_resume", PING) == f"{PING}: delivering\n"
    wait_for(lambda: broker.llen("testapp") == 25)
    assert set(queued_task_ids(broker, "testapp")) == ping_ids()
    assert not pending_due_times()


@contextmanager
def running(
    processes: list[subprocess.Popen], stop: Callable[[subprocess.Popen], None]
) -> Iterator[None]:
    try:
        yield
    finally:
        for process in processes:
            stop(process)


def sigterm(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=30)


def test_two_sweeper_daemons_honour_a_pause_and_publish_the_backlog_on_resume(
    subprocess_env, broker
):
    env = {**subprocess_env, "SCHEDULING_SWEEP_INTERVAL": str(TICK)}
    daemons = [manage(env, "sweep", "--loop", PING, NOTICE) for _ in range(2)]
    with running(daemons, sigterm):
        pause_holds_then_resume_publishes(env, broker)


def test_beats_sweeps_honour_a_pause_and_publish_the_backlog_on_resume(
    subprocess_env, broker, tmp_path
):
    env = {**subprocess_env, "SCHEDULING_SWEEP_INTERVAL": str(TICK)}
    run = os.environ.get("TEST_REDIS_PAIR", "0")
    worker = start_worker(env, "scheduling", f"pause-sweep-worker-{run}")
    beat = start_beat(env, tmp_path / "beat-schedule", f"pause-beat-{run}")
    with running([beat, worker], stop_process):
        pause_holds_then_resume_publishes(env, broker)
