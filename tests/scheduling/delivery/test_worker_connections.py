"""A real worker keeps its database connection across tasks, and replaces one that broke (its
backend killed, as a failover or a restart does) before it can fail an event."""

import pytest
from django.db import connection

from scheduling.delivery.sweep.run import sweep
from tests.conftest import start_worker, stop_process, wait_for
from tests.factories import make_due_pings
from tests.testapp.models import PingEffect, ScheduledPing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

APP_NAME = "keeping-worker"


def worker_backends():
    """(pid, backend start) of each connection the worker holds."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, backend_start FROM pg_stat_activity WHERE application_name = %s",
            [APP_NAME],
        )
        return set(cursor.fetchall())


def deliver_and_wait(count):
    make_due_pings(count)
    sweep(ScheduledPing)
    wait_for(lambda: not ScheduledPing.objects.filter(handled_at__isnull=True).exists(), 60)


@pytest.fixture
def worker(subprocess_env):
    process = start_worker({**subprocess_env, "PGAPPNAME": APP_NAME}, "testapp", APP_NAME)
    yield process
    stop_process(process)


def test_a_worker_keeps_its_connection_and_replaces_a_killed_one_without_failing_an_event(
    worker,
):
    deliver_and_wait(5)
    (first,) = worker_backends()
    deliver_and_wait(5)

    assert worker_backends() == {first}  # the same backend served the next tasks

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [first[0]])
    deliver_and_wait(5)

    (replaced,) = worker_backends()
    assert replaced != first
    rows = ScheduledPing.objects.all()
    assert {(row.attempts, row.last_error) for row in rows} == {(1, "")}  # no failure, no retry
    assert PingEffect.objects.count() == 15


def test_with_the_setting_off_each_task_has_a_connection_of_its_own(subprocess_env):
    env = {**subprocess_env, "PGAPPNAME": APP_NAME, "SCHEDULING_WORKER_KEEPS_CONNECTIONS": "0"}
    process = start_worker(env, "testapp", APP_NAME)
    try:
        deliver_and_wait(3)
        wait_for(lambda: not worker_backends(), 10)  # closed after the last task
    finally:
        stop_process(process)
