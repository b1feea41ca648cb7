"""Sweepers racing, killed mid-batch, and frozen inside their transaction: none lost, none doubled."""

import random
import signal
import time

import pytest
from django.db import connection, transaction

from tests.conftest import delivered_by, start_worker, stop_process, wait_for
from tests.faults.checker import check
from tests.faults.conftest import (
    QUEUE,
    Tail,
    backend_in_transaction,
    end,
    event_id,
    failures_met,
    fallen_due,
    insert_pings,
    published_ids,
    scale,
    statuses,
    sweeper,
    worker_log,
    worker_ready,
    worker_saw,
)
from tests.testapp.models import PingEffect, ScheduledPing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


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
    ping_model, subprocess_env, broker, fault_report
):
    batch = 500
    table, label = ping_model._meta.db_table, ping_model._meta.label
    with connection.cursor() as cursor:
        insert_pings(cursor, scale(), table=table)
    env = {**subprocess_env, "SCHEDULING_BATCH_SIZE": str(batch), "PGAPPNAME": "fault-killed"}

    kills = 0
    # A killed sweeper keeps its lock until the TTL ends; each replacement takes another slot.
    for slot in range(1, 6):
        process = sweeper(env, "--slot", str(slot), label=label)
        if not _caught_mid_transaction(process, "fault-killed"):
            process.wait(timeout=120)
            break
        # Anywhere in the batch: before, during or after its publish, before its commit.
        time.sleep(random.uniform(0.0, 0.2))
        process.send_signal(signal.SIGKILL)
        process.wait()
        kills += 1

    final = sweeper(env, "--slot", "0", label=label)
    output = final.communicate(timeout=300)[0]
    assert final.returncode == 0, output

    with connection.cursor() as cursor:
        verdict = check(fallen_due(cursor, table, label), published_ids(broker))
        assert statuses(cursor, table) == {"delivered": scale()}
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


LOCK_TTL = 1.0  # also the sweep transaction's idle_in_transaction_session_timeout
INTERVAL = 0.2


def test_a_frozen_sweeper_loses_its_batch_to_another_within_the_lock_ttl_and_no_effect_repeats(
    subprocess_env, broker, fault_report
):
    batch = 50
    # Forty batches: forty windows in which to catch a sweeper between its claim and its mark.
    count = max(scale() // 40, 40 * batch)
    env = {
        **subprocess_env,
        "SCHEDULING_BATCH_SIZE": str(batch),
        "SCHEDULING_LOCK_TTL": str(LOCK_TTL),
        "SCHEDULING_SWEEP_INTERVAL": str(INTERVAL),
        # A sweep takes a batch or two, then lets go of the lock: the slot's two sweepers take
        # turns, so the one to freeze gets rows.
        "SCHEDULING_TIME_BUDGET": "0.05",
    }
    log = worker_log("fault-frozen-worker")
    worker = start_worker(env, QUEUE, log)
    # Both on slot 0: the other one takes over once the frozen one's lock has expired.
    frozen = Tail(sweeper({**env, "PGAPPNAME": "fault-frozen"}, "--loop"))
    other = Tail(sweeper({**env, "PGAPPNAME": "fault-other"}, "--loop"))
    try:
        wait_for(lambda: worker_ready(log), timeout=60, interval=0.1)
        wait_for(lambda: _connected("fault-frozen") and _connected("fault-other"), timeout=60)
        rows = _Refill(count)
        frozen_at, held = _frozen_holding_rows(frozen.process, "fault-frozen", rows.top_up)
        assert held, "never frozen holding a batch"
        count = rows.inserted

        # PostgreSQL ends the frozen sweeper's session (idle in transaction for the lock's TTL);
        # its rows are pending again and the other sweeper delivers them on its next tick.
        wait_for(lambda: not _connected("fault-frozen"), timeout=30, interval=0.01)
        ended_after = time.monotonic() - frozen_at
        wait_for(lambda: _delivered(held), timeout=30, interval=0.01)
        delivered_after = time.monotonic() - frozen_at
        wait_for(lambda: _all_handled(count), timeout=120, interval=0.1)

        # Thawed, it goes on with the batch it had claimed: whatever it publishes has gone out
        # already, and its commit fails.
        frozen.process.send_signal(signal.SIGCONT)
        wait_for(lambda: failures_met(frozen.text), timeout=30, interval=0.05)
        wait_for(lambda: _all_handled(count) and _nothing_queued(broker), timeout=60)
    finally:
        end(frozen.process)
        end(other.process)
        stop_process(worker)
    frozen_output, other_output = frozen.finish(), other.finish()

    with connection.cursor() as cursor:
        verdict = check(fallen_due(cursor), worker_saw(log), _effects())
        final = statuses(cursor)
    fault_report(
        verdict,
        rows=count,
        held_by_frozen=len(held),
        lock_ttl=LOCK_TTL,
        session_ended_after=ended_after,
        delivered_by_other_after=delivered_after,
        republished_by_thawed=len(verdict.duplicated),
    )
    assert frozen.process.returncode == 0, frozen_output
    assert other.process.returncode == 0, other_output
    assert 0 < len(held) <= batch
    assert ended_after <= LOCK_TTL + 0.5
    assert delivered_after <= LOCK_TTL + INTERVAL + 0.5
    assert final == {"delivered": count}
    assert not verdict.duplicated_effects, verdict.summary()
    assert verdict.complete, verdict.summary()
    # Only the frozen sweeper's own batch can have gone out twice, and each once more at most.
    assert set(verdict.duplicated) <= {event_id(pk) for pk in held}
    assert set(verdict.duplicated.values()) <= {2}


class _Refill:
    """Inserts `count` due pings now, and `count` more each time none is left pending: the
    other sweeper can win the lock turn after turn and drain them all before the one to freeze
    has claimed any."""

    def __init__(self, count: int) -> None:
        self.count, self.inserted = count, 0
        self.top_up()

    def top_up(self) -> None:
        if not ScheduledPing.objects.filter(status="pending").exists():
            with connection.cursor() as cursor:
                self.inserted += len(insert_pings(cursor, self.count))


def _frozen_holding_rows(process, application_name: str, top_up) -> tuple[float, set[int]]:
    """SIGSTOPs the sweeper once it is caught holding claimed rows (retrying if it was not);
    returns when it was stopped, and the rows it holds. `top_up` keeps rows pending meanwhile."""

    def caught() -> bool:
        top_up()
        return process.poll() is not None or _publishing(application_name)

    for _ in range(50):
        wait_for(caught, 60, 0.002)
        if process.poll() is not None:
            break
        process.send_signal(signal.SIGSTOP)
        stopped_at = time.monotonic()
        # A statement it sent just before the stop (its COMMIT, say) still runs on the server:
        # let it finish, then look at what the stopped transaction holds. The slot's other
        # sweeper is locked out meanwhile: any pending row locked is the frozen one's.
        time.sleep(0.3)
        held = _rows_locked_by_others() if _idle_in_transaction(application_name) else set()
        if held:
            return stopped_at, held
        process.send_signal(signal.SIGCONT)
    return 0.0, set()


def _publishing(application_name: str) -> bool:
    """Between its claim and its marking: the claim (and the rows' pings) read, the client busy
    preparing and publishing the batch."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_stat_activity WHERE application_name = %s"
            " AND state = 'idle in transaction' AND (query LIKE '%%SKIP LOCKED'"
            " OR query LIKE '%%FROM \"testapp_ping\"%%')",
            [application_name],
        )
        return cursor.fetchone() is not None


def _idle_in_transaction(application_name: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_stat_activity"
            " WHERE application_name = %s AND state = 'idle in transaction'",
            [application_name],
        )
        return cursor.fetchone() is not None


def _rows_locked_by_others() -> set[int]:
    """Pending rows this session cannot lock: those another transaction has claimed."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM scheduled_ping WHERE status = 'pending' AND id NOT IN ("
            " SELECT id FROM scheduled_ping WHERE status = 'pending' FOR UPDATE SKIP LOCKED)"
        )
        return {pk for (pk,) in cursor.fetchall()}


def _connected(application_name: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_stat_activity WHERE application_name = %s", [application_name]
        )
        return cursor.fetchone() is not None


def _delivered(pks: set[int]) -> bool:
    return not ScheduledPing.objects.filter(pk__in=pks).exclude(status="delivered").exists()


def _all_handled(count: int) -> bool:
    return ScheduledPing.objects.filter(handled_at__isnull=False).count() == count


def _nothing_queued(broker) -> bool:
    return broker.llen(QUEUE) == 0 and not broker.hlen("unacked")


def _effects() -> list[str]:
    return list(PingEffect.objects.values_list("event_id", flat=True))
