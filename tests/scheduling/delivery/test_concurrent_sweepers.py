"""Several real sweeper processes, and sweepers killed mid-batch: nothing lost, nothing doubled."""

import random
import signal
import time
from collections import Counter

import pytest

from scheduling.rows.models import ScheduledEvent
from tests.conftest import delivered_by, manage, queued_task_ids, wait_for
from tests.factories import make_due_pings
from tests.testapp.models import ScheduledPing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

LABEL = "testapp.ScheduledPing"


def expected_ids(pks):
    return {f"testapp.scheduledping:{pk}:v1" for pk in pks}


def test_racing_sweepers_without_the_lock_publish_every_row_exactly_once(subprocess_env, broker):
    pks = make_due_pings(20_000)
    env = {**subprocess_env, "SCHEDULING_BATCH_SIZE": "200"}

    # A different slot each: four locks, so the lock cannot keep them apart.
    sweepers = [manage(env, "sweep", LABEL, "--slot", str(slot)) for slot in range(4)]
    outputs = [sweeper.communicate(timeout=240)[0] for sweeper in sweepers]

    assert all(sweeper.returncode == 0 for sweeper in sweepers), outputs
    published = Counter(queued_task_ids(broker, "testapp"))
    assert set(published) == expected_ids(pks)
    assert max(published.values()) == 1
    assert sum(delivered_by(output) for output in outputs) == 20_000
    assert sum(delivered_by(output) > 0 for output in outputs) >= 2, "the sweepers did not race"
    assert ScheduledPing.objects.exclude(status=ScheduledEvent.Status.DELIVERED).count() == 0


def test_a_sweeper_killed_mid_batch_loses_nothing(subprocess_env, broker):
    pks = make_due_pings(50_000)
    env = {**subprocess_env, "SCHEDULING_BATCH_SIZE": "500", "SCHEDULING_LOCK_TTL": "2"}
    kills = 0

    # A killed sweeper keeps its lock until the TTL ends; each replacement takes another slot.
    for slot in range(1, 5):
        published_before = broker.llen("testapp")
        sweeper = manage(env, "sweep", LABEL, "--slot", str(slot))
        if not _publishing_started(broker, published_before, sweeper):
            break
        _sleep_randomly()
        sweeper.send_signal(signal.SIGKILL)
        sweeper.wait()
        kills += 1

    time.sleep(2.5)  # slot 1's lock, held by a killed process, has expired by now
    final = manage(env, "sweep", LABEL, "--slot", "1")
    output = final.communicate(timeout=240)[0]
    assert final.returncode == 0, output
    assert "locked out" not in output

    assert kills >= 2
    published = Counter(queued_task_ids(broker, "testapp"))
    assert set(published) == expected_ids(pks), "an event was lost or an unknown one appeared"
    assert ScheduledPing.objects.exclude(status=ScheduledEvent.Status.DELIVERED).count() == 0
    # Re-published ids are the rows whose batch was published but not committed when killed.
    assert all(count <= kills + 1 for count in published.values())


def _publishing_started(broker, published_before, sweeper) -> bool:
    try:
        wait_for(
            lambda: broker.llen("testapp") > published_before or sweeper.poll() is not None,
            interval=0.005,
        )
    except AssertionError:
        return False
    return sweeper.poll() is None


def _sleep_randomly() -> None:
    time.sleep(random.uniform(0.0, 0.05))


def test_sweep_loop_delivers_rows_as_they_fall_due_and_stops_on_sigterm(subprocess_env, broker):
    env = {**subprocess_env, "SCHEDULING_SWEEP_INTERVAL": "0.2"}
    looping = manage(env, "sweep", LABEL, "--loop")
    try:
        pks = make_due_pings(10)
        wait_for(lambda: broker.llen("testapp") == 10)
        more = make_due_pings(5)
        wait_for(lambda: broker.llen("testapp") == 15)
    finally:
        looping.send_signal(signal.SIGTERM)
        output = looping.communicate(timeout=30)[0]

    assert looping.returncode == 0, output
    assert set(queued_task_ids(broker, "testapp")) == expected_ids(pks + more)
