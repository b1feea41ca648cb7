"""A sweeper whose host clock runs a day ahead delivers nothing early: "due" is the database's."""

import glob
import signal
import subprocess
import sys
import time

import pytest
from django.db import connection

from tests.conftest import wait_for
from tests.faults.checker import check
from tests.faults.conftest import Tail, end, fallen_due, insert_pings, published_ids, sweeper

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def clock_ahead() -> dict[str, str]:
    """Environment that runs a process with its clock a day ahead (libfaketime, preloaded).

    Preloaded rather than through the `faketime` wrapper, so that signals reach the sweeper.
    """
    libraries = glob.glob("/usr/lib/*/faketime/libfaketime.so.1")
    if not libraries:
        pytest.fail("libfaketime is required (Debian package faketime; .ci/setup installs it)")
    return {"LD_PRELOAD": libraries[0], "FAKETIME": "+1d"}


def test_a_sweeper_with_its_clock_ahead_delivers_nothing_before_the_database_says_due(
    clock_ahead, subprocess_env, broker, fault_report
):
    env = {**subprocess_env, **clock_ahead, "SCHEDULING_SWEEP_INTERVAL": "0.2"}
    probe = [sys.executable, "-c", "import time; print(time.time())"]
    host_ahead_by = float(subprocess.check_output(probe, env=env, text=True)) - _database_epoch()
    assert host_ahead_by > 23 * 3600, "the sweeper's clock is not ahead"
    with connection.cursor() as cursor:
        insert_pings(cursor, 100)
        insert_pings(cursor, 100, due="now() + interval '1 hour'", name="later")
        insert_pings(cursor, 20, due="now() + interval '3 seconds'", name="soon")

    tail = Tail(sweeper(env, "--loop"))
    try:
        wait_for(lambda: broker.llen("testapp") >= 120, timeout=60, interval=0.05)
        time.sleep(1)  # a few more ticks, in which an early delivery would show
    finally:
        end(tail.process, signal.SIGTERM)
    output = tail.finish()

    with connection.cursor() as cursor:
        verdict = check(fallen_due(cursor), published_ids(broker))
        cursor.execute(
            "SELECT count(*) FILTER (WHERE delivered_at < due_at),"
            " count(*) FILTER (WHERE status = 'pending' AND due_at > now())"
            " FROM scheduled_ping"
        )
        early, still_pending = cursor.fetchone()
    fault_report(verdict, host_ahead_by_s=host_ahead_by, delivered_early=early)
    assert tail.process.returncode == 0, output
    assert verdict.clean, verdict.summary()  # nothing published that was not due by the DB
    assert early == 0
    assert still_pending == 100


def _database_epoch() -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXTRACT(EPOCH FROM statement_timestamp())")
        return float(cursor.fetchone()[0])
