"""PostgreSQL restarted mid-sweep, and a sweep's connection terminated mid-transaction."""

import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from django.db import connection

from tests.conftest import ROOT, wait_for
from tests.faults.checker import check
from tests.faults.conftest import (
    PostgresCluster,
    Tail,
    backend_in_transaction,
    end,
    failures_met,
    fallen_due,
    insert_pings,
    published_ids,
    scale,
    statuses,
    sweeper,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BATCH = 200


def loop_env(env: dict[str, str], **extra: str) -> dict[str, str]:
    return {**env, "SCHEDULING_SWEEP_INTERVAL": "0.5", "SCHEDULING_BATCH_SIZE": str(BATCH), **extra}


def on_cluster(cluster: PostgresCluster, query: Callable[[Any], Any]) -> Any:
    """Runs `query` on a fresh connection: a restart ends every connection there was."""
    with psycopg.connect(cluster.url, autocommit=True, connect_timeout=5) as conn:
        return query(conn.cursor())


def prepare(cluster: PostgresCluster, env: dict[str, str]) -> None:
    admin = cluster.url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("CREATE DATABASE faults")
    command = [sys.executable, str(ROOT / "manage.py"), "migrate", "--no-input", "-v", "0"]
    subprocess.run(command, env=env, check=True, timeout=300)


def settled(cluster: PostgresCluster) -> bool:
    try:
        return set(on_cluster(cluster, statuses)) == {"delivered"}
    except psycopg.OperationalError:
        return False  # still restarting


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_postgres_restarted_mid_sweep_leaves_no_row_stuck_and_delivers_all(
    mode, subprocess_env, dedicated_postgres, broker, fault_report
):
    cluster = dedicated_postgres
    env = loop_env(subprocess_env, DATABASE_URL=cluster.url)
    prepare(cluster, env)
    count = scale() // 2
    on_cluster(cluster, lambda cursor: insert_pings(cursor, count))

    tail = Tail(sweeper(env, "--loop"))
    try:
        wait_for(lambda: broker.llen("testapp") > 0, timeout=60, interval=0.005)
        started = time.monotonic()
        cluster.restart(mode)
        restarted_after = time.monotonic() - started
        delivered_before = len(published_ids(broker))
        wait_for(lambda: settled(cluster), timeout=120, interval=0.1)
        drained_after = time.monotonic() - started
    finally:
        end(tail.process)
    output = tail.finish()

    verdict = check(on_cluster(cluster, fallen_due), published_ids(broker))
    fault_report(
        verdict,
        restart=mode,
        published_before_restart=delivered_before,
        restart_seconds=restarted_after,
        all_delivered_after=drained_after,
    )
    assert tail.process.returncode == 0, output
    assert failures_met(output), "the restart missed the sweep"
    assert verdict.due == count
    assert verdict.complete, verdict.summary()
    # A batch published but not committed when the server went away is published again.
    assert all(times == 2 for times in verdict.duplicated.values())


def test_a_sweep_whose_connection_is_terminated_mid_transaction_delivers_everything(
    subprocess_env, broker, fault_report
):
    with connection.cursor() as cursor:
        insert_pings(cursor, scale() // 2)
    tail = Tail(sweeper(loop_env(subprocess_env, PGAPPNAME="fault-terminated"), "--loop"))
    terminated = 0
    try:
        for _ in range(3):
            pid = wait_for(_sweep_in_transaction, timeout=60, interval=0.002)
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
                terminated += bool(cursor.fetchone()[0])
        wait_for(_all_delivered, timeout=120, interval=0.1)
    finally:
        end(tail.process)
    output = tail.finish()

    with connection.cursor() as cursor:
        verdict = check(fallen_due(cursor), published_ids(broker))
    fault_report(verdict, connections_terminated=terminated)
    assert tail.process.returncode == 0, output
    assert failures_met(output) >= 1, output
    assert verdict.complete, verdict.summary()
    assert len(verdict.duplicated) <= terminated * BATCH


def _sweep_in_transaction() -> int | None:
    with connection.cursor() as cursor:
        return backend_in_transaction(cursor, "fault-terminated")


def _all_delivered() -> bool:
    with connection.cursor() as cursor:
        return set(statuses(cursor)) == {"delivered"}
