"""Sweepers racing, killed mid-batch, and frozen past their lock's TTL: none lost, none doubled."""

import random
import re
import signal
import time

import pytest
from django.db import connection

from tests.conftest import wait_for
from tests.faults.checker import check
from tests.faults.conftest import (
    backend_in_transaction,
    fallen_due,
    insert_pings,
    published_ids,
    scale,
    statuses,
    sweeper,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def delivered_by(output: str) -> int:
    return sum(int(n) for n in re.findall(r"delivered=(\d+)", output))


def test_four_sweepers_without_the_lock_publish_every_due_row_exactly_once(
    subprocess_env, broker, fault_report
):
    with connection.cursor() as cursor:
        insert_pings(cursor, scale())
    env = {**subprocess_env, "SCHEDULING_BATCH_SIZE": "200"}

    started = time.monotonic()
    # A distinct slot each: four locks, so the lock cannot keep them apart; only the claim can.
    sweepers = [sweeper(env, "--slot", str(slot)) for slot in range(4)]
    outputs = [process.communicate(timeout=300)[0] for process in sweepers]
    elapsed = time.monotonic() - started

    assert all(process.returncode == 0 for process in sweepers), outputs
    with connection.cursor() as cursor:
        verdict = check(fallen_due(cursor), published_ids(broker))
        assert statuses(cursor) == {"delivered": scale()}
    per_sweeper = [delivered_by(output) for output in outputs]
    fault_report(verdict, sweepers=4, delivered_per_sweeper=per_sweeper, seconds=elapsed)
    assert verdict.clean, verdict.summary()
    assert verdict.due == scale()
    assert sum(count > 0 for count in per_sweeper) >= 2, "the sweepers did not race"


def test_a_sweeper_killed_mid_batch_again_and_again_loses_nothing(
    subprocess_env, broker, fault_report
):
    batch = 500
    with connection.cursor() as cursor:
        insert_pings(cursor, scale())
    env = {**subprocess_env, "SCHEDULING_BATCH_SIZE": str(batch), "PGAPPNAME": "fault-killed"}

    kills = 0
    # A killed sweeper keeps its lock until the TTL ends; each replacement takes another slot.
    for slot in range(1, 6):
        process = sweeper(env, "--slot", str(slot))
        if not _caught_mid_transaction(process, "fault-killed"):
            process.wait(timeout=120)
            break
        # Anywhere in the batch: before, during or after its publish, before its commit.
        time.sleep(random.uniform(0.0, 0.2))
        process.send_signal(signal.SIGKILL)
        process.wait()
        kills += 1

    final = sweeper(env, "--slot", "0")
    output = final.communicate(timeout=300)[0]
    assert final.returncode == 0, output

    with connection.cursor() as cursor:
        verdict = check(fallen_due(cursor), published_ids(broker))
        assert statuses(cursor) == {"delivered": scale()}
    fault_report(verdict, kills=kills, batch_size=batch)
    assert kills >= 3
    assert verdict.complete, verdict.summary()
    # At-least-once: only a batch published but not yet committed when its sweeper died is
    # published again (same ids): at most one batch's worth of extra messages per kill.
    assert verdict.published - verdict.due <= kills * batch


def _caught_mid_transaction(process, application_name: str) -> bool:
    """Waits until the sweeper has a batch's transaction open (and has published something)."""

    def in_transaction() -> bool:
        if process.poll() is not None:
            return True
        with connection.cursor() as cursor:
            return backend_in_transaction(cursor, application_name) is not None

    wait_for(in_transaction, timeout=60, interval=0.002)
    return process.poll() is None


def test_a_sweeper_frozen_past_its_lock_ttl_then_resumed_publishes_nothing_twice(
    subprocess_env, broker, fault_report
):
    batch = 500
    count = max(scale() // 4, 4 * batch)
    with connection.cursor() as cursor:
        insert_pings(cursor, count)
    env = {**subprocess_env, "SCHEDULING_BATCH_SIZE": str(batch), "SCHEDULING_LOCK_TTL": "1"}
    lock_key = "scheduling:sweep:testapp.scheduledping:0"

    frozen = sweeper({**env, "PGAPPNAME": "fault-frozen"})
    try:
        assert _frozen_holding_rows(frozen, "fault-frozen"), "never frozen holding a batch"
        frozen_at = time.monotonic()
        lock_store = _lock_store()
        wait_for(lambda: not lock_store.exists(lock_key), timeout=30, interval=0.05)
        ttl_passed_after = time.monotonic() - frozen_at

        # Same slot: the lock has expired, so the other one takes it over.
        other = sweeper(env)
        other_output = other.communicate(timeout=300)[0]
        assert other.returncode == 0, other_output
        assert "locked out" not in other_output
        with connection.cursor() as cursor:
            held_back = statuses(cursor).get("pending", 0)
        # The frozen sweeper's claimed batch is row-locked: the other one skipped it.
        assert 0 < held_back <= batch

        frozen.send_signal(signal.SIGCONT)
        frozen_output = frozen.communicate(timeout=120)[0]
        assert frozen.returncode == 0, frozen_output
    finally:
        frozen.send_signal(signal.SIGCONT)
        frozen.kill() if frozen.poll() is None else None

    with connection.cursor() as cursor:
        verdict = check(fallen_due(cursor), published_ids(broker))
        assert statuses(cursor) == {"delivered": count}
    fault_report(verdict, held_back_by_frozen=held_back, ttl_passed_after=ttl_passed_after)
    assert verdict.clean, verdict.summary()


def _frozen_holding_rows(process, application_name: str) -> bool:
    """SIGSTOPs the sweeper once it is caught holding claimed rows (retrying if it was not)."""
    for _ in range(50):
        if not _caught_mid_transaction(process, application_name):
            return False
        process.send_signal(signal.SIGSTOP)
        # A statement it sent just before the stop (its COMMIT, say) still runs on the server:
        # let it finish, then look at what the stopped transaction holds.
        time.sleep(0.3)
        if _holds_claimed_rows(application_name):
            return True
        process.send_signal(signal.SIGCONT)
    return False


def _holds_claimed_rows(application_name: str) -> bool:
    """An open, idle transaction whose claim (`FOR UPDATE`: RowShareLock) holds rows locked."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_locks JOIN pg_stat_activity USING (pid)"
            " WHERE application_name = %s AND state = 'idle in transaction'"
            " AND relation = 'scheduled_ping'::regclass AND mode = 'RowShareLock'",
            [application_name],
        )
        return cursor.fetchone() is not None


def _lock_store():
    import redis
    from django.conf import settings

    return redis.Redis.from_url(settings.REDIS_URL)
