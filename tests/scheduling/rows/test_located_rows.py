"""The sweep's writes find each row by (id, due time): on a table partitioned by due time, a
statement probes the partitions its rows are in, not every partition's index."""

import re
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from scheduling.delivery.sweep import backlog
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.history import bulk
from scheduling.rows.history.models import EventHistory, Kind
from scheduling.rows.partitions import DuePartitions, maintain, partitions
from tests.factories import PingFactory, factory_for
from tests.testapp.models import ScheduledPingPartitioned

Status = ScheduledPingPartitioned.Status
TABLE = ScheduledPingPartitioned._meta.db_table
SCANNED = re.compile(rf"Scan .*\bon ({TABLE}_\w+)")
create_row = factory_for(ScheduledPingPartitioned)


class PartitionsScanned:
    """An execute wrapper: every write of the partitioned table runs first under EXPLAIN
    ANALYZE in a savepoint rolled back, and the partitions its plan scanned are recorded."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, set[str]]] = []

    def __call__(self, execute, sql, params, many, context):
        if not many and writes_the_table(sql):
            self.writes.append((sql, self.scanned(context["cursor"].cursor, sql, params)))
        return execute(sql, params, many, context)

    @staticmethod
    def scanned(cursor, sql, params) -> set[str]:
        cursor.execute("SAVEPOINT explain_write")
        try:
            cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {sql}", params)
            plan = [line for (line,) in cursor.fetchall()]
        finally:
            cursor.execute("ROLLBACK TO SAVEPOINT explain_write")
        return {
            m[1] for line in plan if "never executed" not in line for m in SCANNED.finditer(line)
        }


def writes_the_table(sql: str) -> bool:
    return re.search(rf'UPDATE "?{TABLE}"?\s', sql) is not None


def partition_of(row) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT tableoid::regclass::text FROM {TABLE} WHERE id = %s", [row.pk])
        return cursor.fetchone()[0]


def rows_due(ago: timedelta, count: int = 1, name: str = "ping") -> list:
    ping = PingFactory(name=name)
    return [create_row(ping=ping, due_at=timezone.now() - ago) for _ in range(count)]


@contextmanager
def scanning():
    spy = PartitionsScanned()
    with connection.execute_wrapper(spy):
        yield spy


@pytest.fixture
def many_partitions():
    """A partition a day for ten days ahead, made in the test's transaction."""
    maintain(ScheduledPingPartitioned, spec=DuePartitions(interval=timedelta(days=1), premake=10))
    assert len(partitions(ScheduledPingPartitioned)) >= 12


@pytest.mark.django_db
def test_located_finds_exactly_the_rows_given():
    rows = rows_due(timedelta(minutes=5), count=3)
    moved = rows[1]
    ScheduledPingPartitioned.objects.filter(pk=moved.pk).update(due_at=timezone.now())

    found = ScheduledPingPartitioned.objects.located(rows)

    assert sorted(found.values_list("pk", flat=True)) == sorted([rows[0].pk, rows[2].pk])
    assert not ScheduledPingPartitioned.objects.located([]).exists()


@pytest.mark.django_db
@override_settings(SCHEDULING_MAX_ATTEMPTS=3)
def test_the_sweeps_marks_scan_only_the_partitions_of_their_rows(many_partitions, broker):
    expired = rows_due(timedelta(days=2))  # past max_lateness: a day
    poisoned = rows_due(timedelta(hours=1), name="poison")
    delivered = rows_due(timedelta(minutes=5), count=2)

    with scanning() as scanned:
        result = sweep(ScheduledPingPartitioned)

    assert (result.delivered, result.expired, result.retrying) == (2, 1, 1)
    homes = {partition_of(row) for row in [*expired, *poisoned, *delivered]}
    assert len(scanned.writes) == 3  # delivered, expired, poisoned: a statement each
    for sql, partitions_scanned in scanned.writes:
        assert partitions_scanned, sql
        assert partitions_scanned <= homes, sql


@pytest.mark.django_db
def test_rows_held_for_a_full_queue_are_moved_scanning_only_their_partitions(many_partitions):
    rows = rows_due(timedelta(minutes=5), count=3)
    now = timezone.now()

    with scanning() as scanned:
        backlog.hold(ScheduledPingPartitioned, rows, now=now, full={"testapp": 0})
        claimed_again = list(ScheduledPingPartitioned.objects.filter(pk__in=[r.pk for r in rows]))
        later = now + timedelta(minutes=1)
        backlog.hold(ScheduledPingPartitioned, claimed_again, now=later, full={"testapp": 0})

    # Each hold: an UPDATE of the rows held before, and one (with history) of the others.
    assert [scans for _, scans in scanned.writes] == [{partition_of(rows[0])}] * 4
    held = ScheduledPingPartitioned.objects.filter(pk__in=[r.pk for r in rows])
    assert all(row.due_at > later and row.business_due_at for row in held)
    first_holds = EventHistory.objects.filter(kind=Kind.RESCHEDULED, detail__how="queue backlog")
    assert first_holds.count() == 3


@pytest.mark.django_db
def test_a_held_change_writes_its_history_and_scans_one_partition(many_partitions):
    rows = rows_due(timedelta(minutes=5), count=2)
    values = {"status": Status.CANCELLED, "cancel_reason": "test", "cancelled_at": timezone.now()}
    located = ScheduledPingPartitioned.objects.located(rows)

    with scanning() as scanned:
        count = bulk.apply(
            located, bulk.Change(Kind.CANCELLED, values, {"reason": "test"}), held=True
        )

    assert count == 2
    assert [scans for _, scans in scanned.writes] == [{partition_of(rows[0])}]
    entries = EventHistory.objects.filter(kind=Kind.CANCELLED, row_id__in=[r.pk for r in rows])
    assert entries.count() == 2


@pytest.mark.django_db
def test_by_id_alone_a_write_scans_every_partition(many_partitions):
    rows = rows_due(timedelta(minutes=5))
    values = {"status": Status.CANCELLED, "cancel_reason": "test", "cancelled_at": timezone.now()}
    by_id = ScheduledPingPartitioned.objects.filter(pk=rows[0].pk)

    with scanning() as scanned:
        bulk.apply(by_id, bulk.Change(Kind.CANCELLED, values))

    (scans,) = [scans for _, scans in scanned.writes]
    assert len(scans) == len(partitions(ScheduledPingPartitioned))
