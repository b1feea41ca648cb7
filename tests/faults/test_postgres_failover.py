"""The PostgreSQL primary killed mid-load and its synchronous standby promoted.

Every process names both servers in DATABASE_URL (libpq's multi-host form): the sweep daemon,
a Celery worker and a web server. Rows fall due steadily while the primary is stopped with
`-m immediate` and the standby promoted; all of them reconnect to the new primary on their own.
"""

import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.conftest import ROOT, start_worker, stop_process, wait_for
from tests.faults.checker import check
from tests.faults.conftest import (
    QUEUE,
    Tail,
    end,
    event_id,
    failures_met,
    free_port,
    insert_pings,
    scale,
    spread_due,
    sweeper,
    worker_log,
    worker_ready,
    worker_saw,
)
from tests.faults.replication import DATABASE, ReplicatedPostgres, on, replicated_postgres

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

RATE = 50  # rows falling due per second
INTERVAL = 0.2
# What recovers a handling the failover cut short; above the worker's lag on a busy machine,
# so that queued messages are not published again merely for waiting.
HANDLING_TIMEOUT = 10.0


@pytest.fixture
def pair() -> Iterator[ReplicatedPostgres]:
    with replicated_postgres() as started:
        yield started


def test_the_primary_killed_mid_load_fails_over_to_its_synchronous_standby_losing_nothing(
    subprocess_env, pair, fault_report
):
    env = {
        **subprocess_env,
        "DATABASE_URL": pair.url,
        "SCHEDULING_SWEEP_INTERVAL": str(INTERVAL),
        "SCHEDULING_BATCH_SIZE": "100",
        "SCHEDULING_LOCK_TTL": "2",
        "SCHEDULING_HANDLING_TIMEOUT": str(HANDLING_TIMEOUT),
    }
    pair.create_database(env)
    count = max(scale() // 40, 10 * RATE)
    # Two workers, so the steady load is handled as it falls due even on a busy machine.
    logs = [worker_log(f"fault-failover-worker-{n}") for n in (1, 2)]
    workers = [start_worker(env, QUEUE, log) for log in logs]
    daemon = Tail(sweeper(env, "--loop"))
    web = Web(env)
    try:
        wait_for(lambda: all(map(worker_ready, logs)), timeout=60, interval=0.1)
        assert web.healthz() == 200
        inserted = on(
            pair.primary, lambda cur: insert_pings(cur, count, due=due_over(count)), DATABASE
        )
        # Mid-load: a third delivered, the rest still to fall due.
        wait_for(lambda: delivered(pair.primary) >= count // 3, timeout=120, interval=0.05)

        killed_at = datetime.now(UTC)
        started = time.monotonic()
        pair.kill_primary()
        dead_at = datetime.now(UTC)  # whatever is written after this, the new primary wrote
        pair.promote()
        promoted_after = time.monotonic() - started
        web_status = web.healthz()  # its kept connection went with the old primary
        wait_for(lambda: handled(pair.standby) == count, timeout=120, interval=0.1)
    finally:
        end(daemon.process)
        for worker in workers:
            stop_process(worker)
        web.stop()
    output = daemon.finish()

    times = on(pair.standby, lambda cur: recovery(cur, killed_at, dead_at), DATABASE)
    effects = on(pair.standby, effect_ids, DATABASE)
    received = [event for log in logs for event in worker_saw(log)]
    verdict = check({event_id(pk) for pk in inserted}, received, effects)
    fault_report(
        verdict,
        rows=count,
        promoted_after=promoted_after,
        first_delivered_after=times["delivered"],
        first_handled_after=times["handled"],
        max_delivery_lateness_on_new_primary=times["lateness"],
        max_handling_delay_on_new_primary=times["handling_delay"],
        republished=len(verdict.duplicated),
        web_after_failover=web_status,
    )
    assert daemon.process.returncode == 0, output
    assert failures_met(output), "the failover missed the sweeps"
    assert web_status == 200
    assert verdict.due == count
    assert verdict.complete, verdict.summary()
    assert not verdict.duplicated_effects, verdict.summary()
    assert times["delivered"] is not None


def due_over(count: int) -> str:
    return spread_due(count / RATE, count)


def handled(cluster: Any) -> int:
    return count_where(cluster, "handled_at IS NOT NULL")


def delivered(cluster: Any) -> int:
    return count_where(cluster, "status = 'delivered'")


def count_where(cluster: Any, condition: str) -> int:
    query = f"SELECT count(*) FROM scheduled_ping WHERE {condition}"
    try:
        return int(on(cluster, lambda cur: cur.execute(query).fetchone()[0], DATABASE))
    except Exception:  # stopped, or still starting
        return -1


def recovery(cursor: Any, killed_at: datetime, dead_at: datetime) -> dict[str, float | None]:
    """Seconds from the kill to the first event the new primary delivered and handled; the
    largest lateness (delivered_at - due_at) of rows it delivered, and the largest delay from
    due to handled (handled_at - due_at) of rows it saw handled."""
    cursor.execute(
        "SELECT EXTRACT(EPOCH FROM min(delivered_at) - %(killed)s),"
        " EXTRACT(EPOCH FROM max(delivered_at - due_at))"
        " FROM scheduled_ping WHERE delivered_at > %(dead)s",
        {"killed": killed_at, "dead": dead_at},
    )
    delivered, lateness = cursor.fetchone()
    cursor.execute(
        "SELECT EXTRACT(EPOCH FROM min(handled_at) - %(killed)s),"
        " EXTRACT(EPOCH FROM max(handled_at - due_at))"
        " FROM scheduled_ping WHERE handled_at > %(dead)s",
        {"killed": killed_at, "dead": dead_at},
    )
    handled_first, delay = cursor.fetchone()
    figures = {"delivered": delivered, "handled": handled_first}
    figures |= {"lateness": lateness, "handling_delay": delay}
    return {name: None if value is None else float(value) for name, value in figures.items()}


def effect_ids(cursor: Any) -> list[str]:
    cursor.execute("SELECT event_id FROM testapp_pingeffect")
    return [event for (event,) in cursor.fetchall()]


class Web:
    """The site under gunicorn, one sync worker: it keeps its database connection between
    requests, as production does (CONN_MAX_AGE)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.port = free_port()
        command = [sys.executable, "-m", "gunicorn", "project.wsgi", "-w", "1"]
        command += ["-b", f"127.0.0.1:{self.port}", "--log-level", "warning"]
        self.process = subprocess.Popen(
            command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_for(self._listening, timeout=60, interval=0.1)

    def _listening(self) -> bool:
        try:
            self.healthz()
        except OSError:
            return False
        return True

    def healthz(self) -> int:
        url = f"http://127.0.0.1:{self.port}/healthz"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return int(error.code)

    def stop(self) -> None:
        stop_process(self.process)
