"""Two sweeper hosts with no beat; one loses power (SIGKILL to its whole process group).

Each host runs what a production host runs: the `manage.py sweep --loop` daemon (every slot
whose lock it gets) and a Celery worker. The host is killed while its daemon holds a slot's
lock inside a sweep transaction: the other host takes that slot once the lock's TTL has run
out, its worker takes the messages the dead worker had not acknowledged, and nothing is lost.
A message the dead worker had taken off the Redis queue (BRPOP) but not yet recorded as
unacknowledged is in no queue and in no unacked set: the survivor's reconciliation publishes
it again once the handling timeout passes.
"""

import contextlib
import os
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection

from tests.conftest import ROOT, wait_for
from tests.faults.checker import check
from tests.faults.conftest import (
    LABEL,
    QUEUE,
    backend_in_transaction,
    event_id,
    insert_pings,
    scale,
    worker_log,
    worker_ready,
    worker_saw,
)
from tests.testapp.models import PingEffect, ScheduledPing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

LOCK_TTL = 2.0
INTERVAL = 0.2
RATE = 50  # rows falling due per second
LEAD = 5.0  # seconds before the first row falls due: a busy machine's insert may take that long
# The dead worker's message lost between BRPOP and kombu's unacked record comes back this long
# after its publication (no visibility timeout covers it); well above a loaded machine's
# handling delay here (up to 13 s: the visibility timeout, then the survivor's backlog), so that
# rows merely slow are not published again.
HANDLING_TIMEOUT = 30.0


@dataclass
class Host:
    """A sweep daemon and a worker in one process group of their own, as on one machine."""

    name: str
    process: subprocess.Popen[bytes]  # the worker, which a shell started beside the daemon
    log: str

    @classmethod
    def start(cls, name: str, env: dict[str, str]) -> "Host":
        log = worker_log(name)
        (ROOT / ".run").mkdir(exist_ok=True)
        daemon = [sys.executable, str(ROOT / "manage.py"), "sweep", LABEL, "--loop"]
        worker = [sys.executable, "-m", "celery", "-A", "project", "worker", "-Q", QUEUE]
        worker += ["-P", "solo", "--without-gossip", "--without-mingle", "--without-heartbeat"]
        worker += ["-l", "info"]
        run = ROOT / ".run"
        # Each with its own application_name, so the test can tell a sweep's transaction from
        # a handler's.
        script = (
            f"PGAPPNAME={name}-sweeper {shlex.join(daemon)}"
            f" > {shlex.quote(str(run / f'{log}-daemon.log'))} 2>&1 &"
            f" PGAPPNAME={name}-worker exec {shlex.join(worker)}"
            f" > {shlex.quote(str(run / f'{log}.log'))} 2>&1"
        )
        process = subprocess.Popen(["sh", "-c", script], env=env, cwd=ROOT, start_new_session=True)
        return cls(name, process, log)

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, sig)

    def power_off(self) -> None:
        self.signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        self.signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        finally:
            self.signal(signal.SIGKILL)
            self.process.wait()


# One slot: the dead host's lock holds the model until its TTL ends (the worst case). Two: the
# other host sweeps the same rows through the slot the dead host did not hold, at once.
@pytest.mark.parametrize("slots", [1, 2])
def test_a_sweeper_host_killed_mid_load_is_taken_over_within_the_lock_ttl_losing_nothing(
    slots, subprocess_env, fault_report
):
    env = {
        **subprocess_env,
        "SCHEDULING_SWEEP_INTERVAL": str(INTERVAL),
        "SCHEDULING_LOCK_TTL": str(LOCK_TTL),
        "SCHEDULING_SWEEPER_SLOTS": str(slots),
        "SCHEDULING_BATCH_SIZE": "20",
        # Messages the dead host's worker had fetched but not acknowledged go to the other.
        "TEST_VISIBILITY_TIMEOUT": "3",
        # ...and one it had taken off the queue but not recorded as unacked, after this.
        "SCHEDULING_HANDLING_TIMEOUT": str(HANDLING_TIMEOUT),
    }
    count = max(scale() // 40, 10 * RATE)
    hosts = [Host.start("host-a", env), Host.start("host-b", env)]
    try:
        wait_for(lambda: all(worker_ready(host.log) for host in hosts), timeout=60, interval=0.1)
        with connection.cursor() as cursor:
            insert_pings(cursor, count, due=steady_load())
        # Mid-load, and the worst moment: host A's daemon inside a sweep, holding a slot's lock.
        wait_for(lambda: delivered() >= count // 3, timeout=120, interval=0.05)
        wait_for(lambda: in_sweep("host-a-sweeper"), timeout=60, interval=0.002)
        hosts[0].power_off()
        wait_for(lambda: handled() == count, timeout=120, interval=0.1)
    finally:
        for host in hosts:
            host.stop()
        # A killed process's session ends a moment after it: the test database must be free.
        wait_for(lambda: not connected("host-%"), timeout=30, interval=0.05)

    with connection.cursor() as cursor:
        lateness, handling_delay = max_delays(cursor)
    received = [event for host in hosts for event in worker_saw(host.log)]
    effects = list(PingEffect.objects.values_list("event_id", flat=True))
    inserted = ScheduledPing.objects.values_list("pk", flat=True)
    verdict = check({event_id(pk) for pk in inserted}, received, effects)
    fault_report(
        verdict,
        rows=count,
        slots=slots,
        lock_ttl=LOCK_TTL,
        interval=INTERVAL,
        max_lateness=lateness,
        max_handling_delay=handling_delay,
        handled_by_survivor=len(worker_saw(hosts[1].log, "handled")),
    )
    assert verdict.due == count
    assert verdict.complete, verdict.summary()
    assert not verdict.duplicated_effects, verdict.summary()
    # The bound the takeover promises, plus the surviving daemon's own sweep (claim, publish).
    assert lateness < LOCK_TTL + INTERVAL + 0.5


def steady_load() -> str:
    """SQL for due times RATE a second, from LEAD seconds on: a row is never due before the
    insert's commit made it visible, so all its lateness is the sweepers'."""
    first = f"statement_timestamp() + interval '{LEAD} seconds'"
    return f"{first} + row_number() OVER () * interval '{1 / RATE} seconds'"


def handled() -> int:
    return ScheduledPing.objects.filter(handled_at__isnull=False).count()


def delivered() -> int:
    return ScheduledPing.objects.filter(status=ScheduledPing.Status.DELIVERED).count()


def in_sweep(application_name: str) -> bool:
    with connection.cursor() as cursor:
        return backend_in_transaction(cursor, application_name) is not None


def connected(application_name_like: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_stat_activity WHERE application_name LIKE %s"
            " AND datname = current_database()",
            [application_name_like],
        )
        return cursor.fetchone() is not None


def max_delays(cursor: Any) -> tuple[float, float]:
    """The most any row waited past its due time to be published, and to be handled (the
    dead worker's unacknowledged messages wait for the visibility timeout), by the database's
    clock."""
    cursor.execute(
        "SELECT EXTRACT(EPOCH FROM max(delivered_at - due_at)),"
        " EXTRACT(EPOCH FROM max(handled_at - due_at)) FROM scheduled_ping"
    )
    published, handled = cursor.fetchone()
    return float(published), float(handled)
