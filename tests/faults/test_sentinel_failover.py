"""Redis under Sentinel (a master, a replica, three Sentinels; lock store and broker both) loses
its master mid-load: two sweepers and two workers go on through the failover, no event is lost
and no effect happens twice."""

import itertools
import os
import time

import pytest
from django.db import connection
from django.db.models import F, Max, Min

from scheduling.delivery.locks import RedisSweepLock
from tests.conftest import start_worker, stop_process, wait_for
from tests.faults.checker import check
from tests.faults.conftest import (
    QUEUE,
    Tail,
    end,
    fallen_due,
    insert_pings,
    scale,
    spread_due,
    sweeper,
    worker_log,
    worker_ready,
    worker_saw,
)
from tests.faults.sentinel import DOWN_AFTER_MS, measure_failover, sentinel_redis
from tests.testapp.models import PingEffect, ScheduledPing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
__all__ = ["sentinel_redis"]  # the fixture, for the tests below

INTERVAL = 0.2  # the sweep loop's tick
PUBLISH_TIMEOUT = 1.0
# A message the dead master had taken but not yet passed on to its replica is lost with it: the
# event is published again once it has waited this long unhandled. (Long enough that two solo
# workers on a busy machine do not fall that far behind without any loss.)
HANDLING_TIMEOUT = 20.0
# Messages a worker had taken from the dead master (kombu's unacked hash) come back after this.
VISIBILITY_TIMEOUT = 10.0
# The default: a slot's lock left behind on the promoted replica would stop both sweepers
# this long, were it not released by its holder's next tick.
LOCK_TTL = 30.0
PUBLISHED = "published "  # a sweeper's line for each batch it published


def load_seconds() -> float:
    return float(os.environ.get("FAULTS_SENTINEL_LOAD_SECONDS", "15"))


def failover_env(
    subprocess_env: dict[str, str], cluster_env: dict[str, str], **extra: str
) -> dict[str, str]:
    return {
        **subprocess_env,
        **cluster_env,
        "SCHEDULING_SWEEP_INTERVAL": str(INTERVAL),
        "SCHEDULING_PUBLISH_TIMEOUT": str(PUBLISH_TIMEOUT),
        "SCHEDULING_HANDLING_TIMEOUT": str(HANDLING_TIMEOUT),
        "SCHEDULING_BATCH_SIZE": "200",
        "SCHEDULING_LOCK_TTL": str(LOCK_TTL),
        "TEST_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
        **extra,
    }


def test_a_sentinel_failover_mid_load_loses_no_event_and_repeats_no_effect(
    subprocess_env, sentinel_redis, fault_report
):
    # A steady stream of rows falling due; at CI size 40 a second, at FAULTS_SCALE=100000 200.
    count = int(load_seconds() * scale() / 500)
    env = failover_env(subprocess_env, sentinel_redis.env())
    logs = [worker_log(f"fault-sentinel-worker-{n}") for n in (1, 2)]
    workers = [start_worker(env, QUEUE, log) for log in logs]
    # Both sweepers on slot 0: one holds the lock, the other is locked out, until the failover.
    sweepers = [Tail(sweeper(env, "--loop")) for _ in range(2)]
    try:
        wait_for(lambda: all(worker_ready(log) for log in logs), timeout=60, interval=0.1)
        with connection.cursor() as cursor:
            insert_pings(cursor, count, due=spread_due(load_seconds(), count), name="stream")
        streaming = time.monotonic()
        wait_for(lambda: _handled() > 0, timeout=60, interval=0.05)
        # A third of the way through the stream: rows keep falling due after the kill.
        time.sleep(max(0.0, streaming + load_seconds() / 3 - time.monotonic()))

        killed_here = time.monotonic()
        handled_before = _handled()
        promoted_after = measure_failover(sentinel_redis)

        wait_for(lambda: _all_handled(count), timeout=120, interval=0.2)
    finally:
        for tail in sweepers:
            end(tail.process)
        for worker in workers:
            stop_process(worker)
    outputs = [tail.finish() for tail in sweepers]

    received = [event for log in logs for event in worker_saw(log)]
    effects = list(PingEffect.objects.values_list("event_id", flat=True))
    with connection.cursor() as cursor:
        verdict = check(fallen_due(cursor), received, effects)
    rows = ScheduledPing.objects.all()
    republished = rows.filter(attempts__gt=1).count()
    fault_report(
        verdict,
        rows=count,
        rows_per_second=count / load_seconds(),
        handled_before_kill=handled_before,
        down_after_ms=DOWN_AFTER_MS,
        promoted_after=promoted_after,
        publishing_paused=_longest_pause("delivered_at"),
        handling_paused=_longest_pause("handled_at"),
        max_lateness=rows.aggregate(late=Max(F("handled_at") - F("due_at")))[
            "late"
        ].total_seconds(),
        republished=republished,
        sweepers_publishing_after_kill=sum(
            any(PUBLISHED in line and at >= killed_here for at, line in tail.lines)
            for tail in sweepers
        ),
    )
    assert all(tail.process.returncode == 0 for tail in sweepers), outputs
    assert verdict.complete, verdict.summary()
    assert not verdict.duplicated_effects, verdict.summary()
    assert PingEffect.objects.count() == count
    # Publishing resumed on the new master without waiting out a lock left on it.
    assert _longest_pause("delivered_at") < LOCK_TTL


def _handled() -> int:
    return ScheduledPing.objects.filter(handled_at__isnull=False).count()


def _all_handled(count: int) -> bool:
    return _handled() == count


def _longest_pause(field: str) -> float:
    """The longest time, in seconds, without a row published (delivered_at) or handled
    (handled_at) while the stream's rows were falling due: the failover's pause as users see
    it. (The database's clock; a row published again keeps its last time.)"""
    rows = ScheduledPing.objects.filter(ping__name="stream")
    window = rows.aggregate(first=Min("due_at"), last=Max("due_at"))
    moments = sorted(
        rows.filter(**{f"{field}__range": (window["first"], window["last"])}).values_list(
            field, flat=True
        )
    )
    return max((b - a).total_seconds() for a, b in itertools.pairwise(moments))


@pytest.mark.parametrize("writes", ["asynchronous", "min-replicas-to-write"])
def test_messages_the_dead_master_never_passed_on_are_delivered_late_never_lost(
    writes, subprocess_env, sentinel_redis, fault_report
):
    # Redis replicates asynchronously: what a master acknowledged in the moment before it died
    # may never reach the replica that takes over. Here that moment is made long (the replica
    # cut off while a sweep publishes), so every message of the batch is in it.
    count = max(scale() // 100, 50)
    with connection.cursor() as cursor:
        insert_pings(cursor, count)
    env = failover_env(
        subprocess_env, sentinel_redis.env(), SCHEDULING_HANDLING_TIMEOUT=str(SHORT_TIMEOUT)
    )
    master = sentinel_redis.master.client(db=1)
    if writes == "min-replicas-to-write":
        # The master refuses writes while no replica has acknowledged within the last second.
        # (Set on the master only: the promoted replica has no replica of its own to wait for.)
        master.config_set("min-replicas-to-write", 1)
        master.config_set("min-replicas-max-lag", 1)
    # Cut off (frozen, its link closed by the master): what the master takes from now on
    # stays in the master's memory. Closing the link also keeps the replica from reading, once
    # thawed, what its socket had buffered.
    sentinel_redis.replica.freeze()
    master.client_kill_filter(_type="replica")
    if writes == "min-replicas-to-write":
        wait_for(lambda: _good_replicas(master) == 0, timeout=30, interval=0.1)
    first_sweep = sweeper(env).communicate(timeout=60)[0]
    taken_by_master = master.llen(QUEUE)

    promoted_after = measure_failover(sentinel_redis, thaw=sentinel_redis.replica)
    on_new_master = sentinel_redis.data(1).llen(QUEUE)
    log = worker_log(f"fault-sentinel-late-{writes}")
    worker = start_worker(env, QUEUE, log)
    wait_for(lambda: worker_ready(log), timeout=60, interval=0.1)
    tail = Tail(sweeper(env, "--loop"))
    started = time.monotonic()
    try:
        wait_for(lambda: _all_handled(count), timeout=90, interval=0.1)
        handled_after = time.monotonic() - started
    finally:
        end(tail.process)
        stop_process(worker)

    effects = list(PingEffect.objects.values_list("event_id", flat=True))
    with connection.cursor() as cursor:
        verdict = check(fallen_due(cursor), worker_saw(log), effects)
    attempts = set(ScheduledPing.objects.values_list("attempts", flat=True))
    fault_report(
        verdict,
        writes=writes,
        taken_by_dead_master=taken_by_master,
        lost_with_it=taken_by_master - on_new_master,
        promoted_after=promoted_after,
        handling_timeout=SHORT_TIMEOUT,
        all_handled_after=handled_after,
        attempts=sorted(attempts),
    )
    assert tail.process.returncode == 0, tail.text
    assert verdict.complete, verdict.summary()
    assert not verdict.duplicated_effects, verdict.summary()
    if writes == "asynchronous":
        # The batch was taken and committed as delivered, then lost with the master: each event
        # is published again once the handling timeout has passed, a delay and not a loss.
        assert taken_by_master == count
        assert on_new_master == 0
        # (A third time for any the worker had not handled within the timeout again.)
        assert min(attempts) == 2
    else:
        # Refused while the replica lagged: the rows stayed pending, at no cost in attempts.
        assert "NOREPLICAS" in first_sweep
        assert taken_by_master == 0
        assert min(attempts) == 1


SHORT_TIMEOUT = 5.0


def _good_replicas(master) -> int:
    return int(master.info("replication")["min_slaves_good_slaves"])


def test_a_lock_whose_release_failed_in_the_failover_is_released_by_its_next_sweep(
    dedicated_redis,
):
    # The key outlives the outage (as on a replica promoted meanwhile); its holder's release
    # went to a store that was away.
    name = "scheduling:sweep:testapp.scheduledping:0"
    held = RedisSweepLock(name, LOCK_TTL, dedicated_redis.client())
    assert held.acquire()
    dedicated_redis.stop(save=True)
    held.release()
    dedicated_redis.start()
    client = dedicated_redis.client()
    left = client.get(name)
    assert left is not None  # any other process's sweep is locked out until the TTL ends

    # This process's next sweep of the slot deletes what it left (its token) and takes it.
    again = RedisSweepLock(name, LOCK_TTL, client)
    assert again.acquire()
    assert not again.degraded
    assert client.get(name) not in (None, left)
    again.release()
    assert not client.exists(name)
