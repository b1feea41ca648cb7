"""Many rows due in the same second: the sweeper's memory and transactions stay bounded."""

import os
import threading
import time

import pytest
from django.db import connection, connections

from tests.faults.checker import check
from tests.faults.conftest import fallen_due, insert_pings, published_ids, scale, statuses, sweeper

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BATCH = 1000
SAME_SECOND = "date_trunc('second', now()) - interval '1 second'"


def volume() -> int:
    """FAULTS_VOLUME rows (default 5 x FAULTS_SCALE, 100,000 at CI's scale)."""
    return int(os.environ.get("FAULTS_VOLUME", str(5 * scale())))


def test_rows_due_in_the_same_second_drain_with_bounded_memory_and_transactions(
    subprocess_env, broker, fault_report
):
    env = {**subprocess_env, "SCHEDULING_BATCH_SIZE": str(BATCH), "PGAPPNAME": "fault-volume"}
    with connection.cursor() as cursor:
        insert_pings(cursor, volume() // 20, due=SAME_SECOND)
    small_rss, _ = run_sweeper(env)
    with connection.cursor() as cursor:
        insert_pings(cursor, volume(), due=SAME_SECOND)

    started = time.monotonic()
    rss, longest_transaction = run_sweeper(env)
    elapsed = time.monotonic() - started

    with connection.cursor() as cursor:
        verdict = check(fallen_due(cursor), published_ids(broker))
        assert statuses(cursor) == {"delivered": volume() + volume() // 20}
    fault_report(
        verdict,
        rows_in_one_second=volume(),
        seconds=elapsed,
        peak_rss_mb=rss / 1024,
        peak_rss_mb_at_one_twentieth=small_rss / 1024,
        longest_transaction_s=longest_transaction,
    )
    assert verdict.clean, verdict.summary()
    # Memory follows the batch, not the backlog: twenty times the rows, about the same peak.
    assert rss - small_rss < 64 * 1024, "peak RSS grew with the backlog"
    # A transaction holds one batch; seconds would mean the whole backlog in one.
    assert longest_transaction < 5.0


def run_sweeper(env: dict[str, str]) -> tuple[int, float]:
    """Runs one draining sweep; returns its peak RSS (KiB) and its longest transaction (s)."""
    process = sweeper(env)
    sampler = TransactionSampler("fault-volume")
    sampler.start()
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    sampler.stop()
    assert process.returncode == 0, output
    return usage.ru_maxrss, sampler.longest


class TransactionSampler(threading.Thread):
    """Samples pg_stat_activity for the longest open transaction of one application name."""

    def __init__(self, application_name: str) -> None:
        super().__init__(daemon=True)
        self.application_name = application_name
        self.longest = 0.0
        self.stopping = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopping.wait(0.01):
                self.longest = max(self.longest, self.sample())
        finally:
            connections.close_all()

    def sample(self) -> float:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT COALESCE(max(EXTRACT(EPOCH FROM statement_timestamp() - xact_start)), 0)"
                " FROM pg_stat_activity WHERE application_name = %s",
                [self.application_name],
            )
            return float(cursor.fetchone()[0])

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=10)
