"""A domain on its own database, end to end: two `sweep --loop` daemons and a real Celery worker,
each its own process, deliver the second database's rows; each effect happens exactly once."""

import signal
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from scheduling.rows.states import Status
from tests.conftest import manage, start_worker, stop_process, wait_for
from tests.remoteapp.models import Account, ReminderSent, ScheduledReminder

pytestmark = [pytest.mark.django_db(transaction=True, databases="__all__"), pytest.mark.slow]

ROWS = 300


def due_reminders(count: int) -> list[ScheduledReminder]:
    accounts = Account.objects.bulk_create(Account(name=f"a{i}") for i in range(count))
    now = timezone.now()
    return ScheduledReminder.objects.bulk_create(
        ScheduledReminder(
            account=account, due_at=now - timedelta(seconds=1) + i * timedelta(milliseconds=1)
        )
        for i, account in enumerate(accounts)
    )


def handled() -> int:
    return ScheduledReminder.objects.filter(handled_at__isnull=False).count()


def test_two_daemons_and_a_worker_deliver_every_remote_row_once(subprocess_env):
    rows = due_reminders(ROWS)
    env = {**subprocess_env, "SCHEDULING_SWEEPER_SLOTS": "2", "SCHEDULING_BATCH_SIZE": "50"}
    daemons = [manage(env, "sweep", "remoteapp.ScheduledReminder", "--loop") for _ in range(2)]
    worker = start_worker(env, "remoteapp", "remote-database-worker")
    try:
        wait_for(lambda: handled() == ROWS, timeout=120)
    finally:
        stop_process(worker)
        for daemon in daemons:
            daemon.send_signal(signal.SIGTERM)
        outputs = [daemon.communicate(timeout=30)[0] for daemon in daemons]

    sent = list(ReminderSent.objects.values_list("event_id", flat=True))
    assert sorted(sent) == sorted(row.event_id for row in rows), outputs
    statuses = set(ScheduledReminder.objects.values_list("status", flat=True))
    assert statuses == {Status.DELIVERED}
    assert ReminderSent._meta.db_table not in connections["default"].introspection.table_names()
