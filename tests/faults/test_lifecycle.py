"""A handling's lifecycle under faults, with real sweepers and workers: a handler that fails
is tried again after a backoff; messages the broker lost, or that no worker consumed, are
published again after the handling timeout; a row out of tries fails visibly until a person
retries it; an at-most-once effect cut short by a killed worker is never repeated."""

import time
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from scheduling.rows.states import Status
from tests.conftest import start_worker, stop_process, wait_for
from tests.faults.checker import check
from tests.faults.conftest import (
    QUEUE,
    Tail,
    end,
    fallen_due,
    insert_pings,
    published_ids,
    scale,
    sweeper,
    worker_log,
    worker_ready,
    worker_saw,
)
from tests.testapp.models import Ping, PingEffect, ScheduledOnce, ScheduledPing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

INTERVAL = 0.2  # the sweep loop's tick
BACKOFF, BACKOFF_MAX = 0.5, 2.0
HANDLING_TIMEOUT = 3.0
SLACK = 1.0  # process scheduling, a batch's own time


def lifecycle_env(env: dict[str, str], **extra: str) -> dict[str, str]:
    return {
        **env,
        "SCHEDULING_SWEEP_INTERVAL": str(INTERVAL),
        "SCHEDULING_RETRY_BACKOFF": str(BACKOFF),
        "SCHEDULING_RETRY_BACKOFF_MAX": str(BACKOFF_MAX),
        **extra,
    }


def ready_worker(env: dict[str, str], queues: str, name: str):
    process = start_worker(env, queues, name)
    wait_for(lambda: worker_ready(name), timeout=60, interval=0.1)
    return process


def effects() -> list[str]:
    return list(PingEffect.objects.values_list("event_id", flat=True))


def ping_ids(pks: list[int]) -> set[str]:
    return {f"testapp.scheduledping:{pk}:v1" for pk in pks}


def all_handled() -> bool:
    return not ScheduledPing.objects.exclude(status="delivered", handled_at__isnull=False).exists()


def backoff_ceiling(attempts: int) -> float:
    return min(BACKOFF * 2 ** (attempts - 1), BACKOFF_MAX)


FAILURES = 3


def test_a_handler_failing_its_first_tries_is_retried_after_a_backoff_and_handled_once(
    subprocess_env, fault_report
):
    with connection.cursor() as cursor:
        failing = insert_pings(cursor, max(scale() // 1000, 5), name=f"fail:{FAILURES}")
        healthy = insert_pings(cursor, scale() // 100)
    env = lifecycle_env(subprocess_env)
    log = worker_log("fault-lifecycle-retry")
    worker = ready_worker(env, QUEUE, log)
    # (pk, try) -> (last_error, backoff in seconds), as a person sees it while the row waits.
    waiting = {}

    def settled() -> bool:
        waiting.update(_rows_waiting_for_their_next_try())
        return all_handled()

    started = time.monotonic()
    tail = Tail(sweeper(env, "--loop"))
    try:
        wait_for(settled, timeout=60, interval=0.05)
        elapsed = time.monotonic() - started
    finally:
        end(tail.process)
        stop_process(worker)

    received = worker_saw(log)
    with connection.cursor() as cursor:
        verdict = check(fallen_due(cursor), received, effects())
    delays = [delay for _, delay in waiting.values()]
    fault_report(
        verdict,
        failing=len(failing),
        failures_each=FAILURES,
        waits_seen=f"{len(waiting)}/{len(failing) * FAILURES}",
        shortest_backoff=min(delays),
        longest_backoff=max(delays),
        seconds=elapsed,
    )
    assert verdict.complete, verdict.summary()
    assert not verdict.duplicated_effects, verdict.summary()
    # Every try is a publication: FAILURES + 1 for the failing rows, one for the others.
    assert verdict.duplicated == dict.fromkeys(ping_ids(failing), FAILURES + 1)
    rows = ScheduledPing.objects.filter(pk__in=failing)
    assert set(rows.values_list("attempts", "last_error")) == {(FAILURES + 1, "")}
    assert set(ScheduledPing.objects.filter(pk__in=healthy).values_list("attempts")) == {(1,)}
    # While it waits for its next try, the row shows the failure and is due after the backoff
    # (equal jitter: between half and all of it), doubling with each try.
    for (pk, attempts), (error, delay) in waiting.items():
        assert error == f"RuntimeError: planned failure on try {attempts} of fail:{FAILURES}"
        ceiling = backoff_ceiling(attempts)
        # (due_at is the worker's clock just before the update that sets updated_at)
        assert ceiling / 2 - 0.1 <= delay <= ceiling + 0.1, (pk, attempts, delay)
    # The last wait is the longest (>= 1 s): never missed by polling every 50 ms.
    assert {pk for pk, attempts in waiting if attempts == FAILURES} == set(failing)


def _rows_waiting_for_their_next_try() -> dict[tuple[int, int], tuple[str, float]]:
    with connection.cursor() as cursor:
        # updated_at is the failure's time (the database's clock), due_at the next try's.
        cursor.execute(
            "SELECT id, attempts, last_error, EXTRACT(EPOCH FROM due_at - updated_at)"
            " FROM scheduled_ping WHERE status = 'pending' AND last_error <> ''"
        )
        return {(pk, attempts): (error, float(delay)) for pk, attempts, error, delay in cursor}


def test_events_the_broker_lost_after_the_sweep_committed_are_handled_once_after_the_timeout(
    subprocess_env, broker, fault_report
):
    count = scale() // 100
    with connection.cursor() as cursor:
        pks = insert_pings(cursor, count)
    env = lifecycle_env(subprocess_env, SCHEDULING_HANDLING_TIMEOUT=str(HANDLING_TIMEOUT))
    log = worker_log("fault-lifecycle-flushed")
    worker = None
    tail = Tail(sweeper(env, "--loop"))
    try:
        wait_for(lambda: broker.llen(QUEUE) == count, timeout=60, interval=0.05)
        # The sweep has committed (the rows say delivered) when the broker loses its data.
        wait_for(lambda: _delivered_count() == count, timeout=30, interval=0.05)
        first_delivery = dict(ScheduledPing.objects.values_list("pk", "delivered_at"))
        broker.flushdb()
        flushed_at = time.monotonic()
        worker = ready_worker(env, QUEUE, log)
        wait_for(all_handled, timeout=60, interval=0.1)
        handled_after = time.monotonic() - flushed_at
    finally:
        end(tail.process)
        if worker is not None:
            stop_process(worker)

    received = worker_saw(log)
    with connection.cursor() as cursor:
        verdict = check(fallen_due(cursor), received, effects())
    rows = ScheduledPing.objects.filter(pk__in=pks)
    attempts = Counter(rows.values_list("attempts", flat=True))
    # From the lost publication to the next one, by the database's clock. A row still queued
    # a timeout after that (a solo worker drains ~70 a second) is published a third time.
    republished = [
        (delivered_at - first_delivery[pk]).total_seconds()
        for pk, delivered_at in rows.filter(attempts=2).values_list("pk", "delivered_at")
    ]
    fault_report(
        verdict,
        handling_timeout=HANDLING_TIMEOUT,
        attempts=dict(attempts),
        republished_after_min=min(republished),
        republished_after_max=max(republished),
        handled_after_flush=handled_after,
    )
    assert verdict.complete, verdict.summary()
    assert not verdict.duplicated_effects, verdict.summary()
    assert min(attempts) >= 2, attempts  # each event was published again: another try
    # Not before the timeout, and within a tick (and a batch) after it.
    assert min(republished) >= HANDLING_TIMEOUT
    assert max(republished) <= HANDLING_TIMEOUT + INTERVAL + SLACK


def _delivered_count() -> int:
    return ScheduledPing.objects.filter(status=Status.DELIVERED).count()


def test_events_whose_queue_no_worker_consumes_yet_are_handled_once_when_one_does(
    subprocess_env, broker, fault_report
):
    count = scale() // 200  # each queued twice or more, for a solo worker to drain
    with connection.cursor() as cursor:
        insert_pings(cursor, count)
    env = lifecycle_env(subprocess_env, SCHEDULING_HANDLING_TIMEOUT=str(HANDLING_TIMEOUT))
    log = worker_log("fault-lifecycle-late")
    # A deploy whose only worker forgot the domain's queue: it runs, the events wait.
    elsewhere = ready_worker(env, "scheduling", worker_log("fault-lifecycle-elsewhere"))
    worker = None
    tail = Tail(sweeper(env, "--loop"))
    started = time.monotonic()
    try:
        # Not handled within the timeout: every event is published again, beside its first
        # message, still queued.
        wait_for(lambda: _least_attempts() >= 2, timeout=60, interval=0.1)
        waited = time.monotonic() - started
        queued = published_ids(broker)
        stop_process(elsewhere)
        worker = ready_worker(env, QUEUE, log)
        wait_for(lambda: all_handled() and broker.llen(QUEUE) == 0, timeout=60, interval=0.1)
        wait_for(lambda: not broker.hlen("unacked"), timeout=30, interval=0.1)
    finally:
        end(tail.process)
        stop_process(elsewhere)
        if worker is not None:
            stop_process(worker)

    received = worker_saw(log)
    with connection.cursor() as cursor:
        due = fallen_due(cursor)
    verdict = check(due, received, effects())
    fault_report(
        verdict,
        queued_before_a_worker=len(queued),
        queued_twice_or_more=len(check(due, queued).duplicated),
        waited=waited,
        skipped=len(worker_saw(log, "skipped")),
    )
    assert verdict.complete, verdict.summary()
    assert not verdict.duplicated_effects, verdict.summary()
    assert len(check(due, queued).duplicated) == count  # the broker held duplicates of each
    assert len(worker_saw(log, "handled")) == count


def _least_attempts() -> int:
    return min(ScheduledPing.objects.values_list("attempts", flat=True))


MAX_ATTEMPTS = 3


def test_an_event_out_of_tries_fails_visibly_and_once_retried_is_handled_once(
    subprocess_env, admin_client, fault_report
):
    with connection.cursor() as cursor:
        pks = insert_pings(cursor, max(scale() // 1000, 5), name=f"fail:{MAX_ATTEMPTS}")
    env = lifecycle_env(subprocess_env, SCHEDULING_MAX_ATTEMPTS=str(MAX_ATTEMPTS))
    log = worker_log("fault-lifecycle-exhausted")
    worker = ready_worker(env, QUEUE, log)
    tail = Tail(sweeper(env, "--loop"))
    started = time.monotonic()
    try:
        wait_for(lambda: _failed_count() == len(pks), timeout=60, interval=0.05)
        failed_after = time.monotonic() - started
        failed = set(ScheduledPing.objects.values_list("status", "attempts", "last_error"))
        page = admin_client.get("/admin/testapp/scheduledping/?lifecycle=failed").content.decode()
        effects_while_failed = len(effects())

        # A person reads the error, fixes its cause and retries the rows (the admin's action).
        Ping.objects.filter(scheduled__pk__in=pks).update(name="fixed")
        retried_at = time.monotonic()
        response = admin_client.post(
            "/admin/testapp/scheduledping/", {"action": "retry_rows", "_selected_action": pks}
        )
        wait_for(all_handled, timeout=60, interval=0.05)
        handled_after_retry = time.monotonic() - retried_at
    finally:
        end(tail.process)
        stop_process(worker)

    received = worker_saw(log)
    tries = Counter(event.rsplit(":", 1)[1] for event in received)
    with connection.cursor() as cursor:
        # The events due now are the retried versions (v2); the earlier tries were v1.
        verdict = check(fallen_due(cursor), [e for e in received if e.endswith(":v2")], effects())
    fault_report(
        verdict,
        max_attempts=MAX_ATTEMPTS,
        tries_before_failing=tries["v1"],
        failed_after=failed_after,
        handled_after_retry=handled_after_retry,
    )
    error = f"RuntimeError: planned failure on try {MAX_ATTEMPTS} of fail:{MAX_ATTEMPTS}"
    assert failed == {("failed", MAX_ATTEMPTS, error)}
    assert effects_while_failed == 0
    assert error in page
    assert f"testapp.scheduledping:{pks[0]}:v1" in page
    assert response.status_code == 302
    # Out of tries, nothing published the failed version again: MAX_ATTEMPTS tries each.
    assert tries["v1"] == MAX_ATTEMPTS * len(pks)
    assert verdict.clean, verdict.summary()
    rows = ScheduledPing.objects.filter(pk__in=pks)
    assert set(rows.values_list("version", "attempts", "last_error")) == {(2, 1, "")}


def _failed_count() -> int:
    return ScheduledPing.objects.filter(status=Status.FAILED).count()


VISIBILITY_TIMEOUT = 2.0
SLOW_EFFECT = 60.0  # far longer than the test: the worker is killed during it


def test_an_at_most_once_effect_cut_short_by_a_killed_worker_is_never_repeated(
    subprocess_env, admin_client, fault_report, settings
):
    settings.SCHEDULING_HANDLING_TIMEOUT = HANDLING_TIMEOUT  # as the sweeper's
    slow = make_once_rows(1, name=f"slow:{SLOW_EFFECT}", ago=timedelta(minutes=10))[0]
    others = make_once_rows(scale() // 100)
    slow_id = f"testapp.scheduledonce:{slow}:v1"
    env = lifecycle_env(
        subprocess_env,
        SCHEDULING_HANDLING_TIMEOUT=str(HANDLING_TIMEOUT),
        TEST_VISIBILITY_TIMEOUT=str(VISIBILITY_TIMEOUT),
    )
    first_log, second_log = worker_log("fault-once-1"), worker_log("fault-once-2")
    first = ready_worker(env, QUEUE, first_log)
    second = None
    tail = Tail(sweeper(env, "testapp.ScheduledOnce", "--loop"))
    try:
        # Due first, so the first worker takes it first: the effect happens, then it is killed
        # before it can report back.
        wait_for(lambda: slow_id in effects(), timeout=60, interval=0.02)
        first.kill()
        first.wait()
        killed_at = time.monotonic()
        second = ready_worker(env, QUEUE, second_log)
        # The killed worker's message comes back (the visibility timeout) and is skipped.
        wait_for(lambda: slow_id in worker_saw(second_log, "skipped"), timeout=60, interval=0.1)
        redelivered_after = time.monotonic() - killed_at
        wait_for(lambda: _handled_once_rows() == len(others), timeout=60, interval=0.1)
        # And the sweep's reconciliation has had several ticks past the handling timeout.
        wait_for(lambda: _past_handling_timeout(slow), timeout=30, interval=0.1)
        # What a person sees: the row in flight in the admin, never published again.
        page = admin_client.get(
            "/admin/testapp/scheduledonce/", {"lifecycle": "in_flight"}
        ).content.decode()
    finally:
        end(tail.process)
        stop_process(first)
        if second is not None:
            stop_process(second)

    received = worker_saw(first_log) + worker_saw(second_log)
    due = {f"testapp.scheduledonce:{pk}:v1" for pk in [slow, *others]}
    verdict = check(due, received, effects())
    row = ScheduledOnce.objects.get(pk=slow)
    fault_report(
        verdict,
        visibility_timeout=VISIBILITY_TIMEOUT,
        handling_timeout=HANDLING_TIMEOUT,
        redelivered_after_kill=redelivered_after,
        slow_effects=effects().count(slow_id),
        slow_state=row.lifecycle,
    )
    assert verdict.complete, verdict.summary()
    assert not verdict.duplicated_effects, verdict.summary()
    assert slow_id in verdict.duplicated  # delivered again, and not acted on
    # Left for a person: the effect may have happened (it did), nothing retries it by itself.
    # It stays in flight, past the handling timeout: stuck, not failed.
    assert (row.lifecycle, row.handled_at, row.attempts) == ("in_flight", None, 1)
    assert ScheduledOnce.objects.stuck_in_flight().filter(pk=slow).exists()
    assert "In flight" in page
    assert slow_id in page


def make_once_rows(
    count: int, *, name: str = "once", ago: timedelta = timedelta(minutes=5)
) -> list[int]:
    due_at = timezone.now() - ago
    pings = Ping.objects.bulk_create(Ping(name=name, group="faults") for _ in range(count))
    rows = ScheduledOnce.objects.bulk_create(ScheduledOnce(ping=p, due_at=due_at) for p in pings)
    return [row.pk for row in rows]


def _handled_once_rows() -> int:
    return ScheduledOnce.objects.handled().count()


def _past_handling_timeout(pk: int) -> bool:
    # By the database's clock, which the reconciliation reads.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT delivered_at + make_interval(secs => %s) < statement_timestamp()"
            " FROM scheduled_once WHERE id = %s",
            [HANDLING_TIMEOUT + 3 * INTERVAL, pk],
        )
        return bool(cursor.fetchone()[0])
