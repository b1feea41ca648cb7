"""Scheduled tables partitioned on due_at: conversion, maintenance, retention, moved rows."""

import threading
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.core.checks import Warning
from django.core.management import call_command
from django.db import connection, transaction
from django.db.utils import OperationalError
from django.test import override_settings

from scheduling.delivery.checks import (
    check_partition_labels,
    check_partitioned_tables,
    configuration_errors,
)
from scheduling.delivery.handling.once import locked_row
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.clock import database_now
from scheduling.rows.history.models import EventHistory, Kind
from scheduling.rows.partitions import (
    DuePartitions,
    convert,
    is_partitioned,
    maintain,
    moved_row,
    partitions,
)
from scheduling.rows.purge import purge_model, purge_orphans
from tests.conftest import CURRENT_TIME
from tests.factories import PingFactory
from tests.testapp.models import ScheduledPing, ScheduledPingPartitioned

Status = ScheduledPing.Status
DAY = timedelta(days=1)


def where(model, pk):
    """The partition that holds the row."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT tableoid::regclass::text FROM {model._meta.db_table} WHERE id = %s", [pk]
        )
        return cursor.fetchone()[0]


def rows_of(model, count, **fields):
    """Rows created in the test's transaction, their deferred foreign key checks run at once:
    PostgreSQL refuses DDL on a table with checks pending, as a migration's would be."""
    ping = PingFactory()
    rows = [model.objects.create(ping=ping, **fields) for _ in range(count)]
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    return rows


@pytest.mark.django_db
def test_converting_a_table_with_rows_loses_none_and_its_pending_rows_are_still_delivered(broker):
    now = database_now()
    done = rows_of(ScheduledPing, 5, due_at=now - 3 * DAY, status=Status.DELIVERED)
    due = rows_of(ScheduledPing, 4, due_at=now - timedelta(minutes=1))
    later = rows_of(ScheduledPing, 3, due_at=now + 5 * DAY)
    before = sorted(ScheduledPing.objects.values_list("pk", flat=True))

    conversion = convert(ScheduledPing, "1d", concurrently=False)  # the test's transaction

    assert is_partitioned(ScheduledPing)
    assert conversion.rows == 12
    assert sorted(ScheduledPing.objects.values_list("pk", flat=True)) == before
    assert where(ScheduledPing, done[0].pk) == "scheduled_ping_before"
    assert sweep(ScheduledPing).delivered == 4
    assert {row.status for row in ScheduledPing.objects.filter(pk__in=[r.pk for r in due])} == {
        Status.DELIVERED
    }
    assert ScheduledPing.objects.get(pk=later[0].pk).status == Status.PENDING
    # The old rows' partition takes the next premake (14) days' writes too: a write due
    # further ahead is all the conversion's CHECK refuses meanwhile.
    assert conversion.bound >= now + 14 * DAY
    newer = ScheduledPing.objects.create(ping=PingFactory(), due_at=conversion.bound + DAY)
    assert newer.pk > max(before)  # the id sequence goes on where the identity left off
    assert where(ScheduledPing, newer.pk) != "scheduled_ping_before"


@pytest.mark.django_db
def test_the_partitioned_test_model_has_its_partitions_and_a_default_one():
    found = partitions(ScheduledPingPartitioned)

    assert found[0].lower is None
    assert found[-1].default
    assert all(p.upper - p.lower == DAY for p in found[1:-1])


@pytest.mark.django_db
def test_maintain_premakes_partitions_and_moves_rows_the_default_one_held():
    far = database_now() + 20 * DAY
    (row,) = rows_of(ScheduledPingPartitioned, 1, due_at=far)
    assert where(ScheduledPingPartitioned, row.pk) == "scheduled_ping_partitioned_default"

    made = maintain(ScheduledPingPartitioned, spec=DuePartitions(interval=DAY, premake=25))

    assert made.moved == 1
    assert len(made.created) >= 20
    assert where(ScheduledPingPartitioned, row.pk) in made.created
    assert maintain(ScheduledPingPartitioned, spec=DuePartitions(premake=25)).created == []


@pytest.mark.django_db
def test_a_partition_whose_rows_are_all_done_is_dropped_whole_and_its_entries_go_as_orphans():
    now = database_now()
    old = now - 60 * DAY
    rows = rows_of(ScheduledPingPartitioned, 6, due_at=old, status=Status.CANCELLED)
    ScheduledPingPartitioned.objects.update(cancelled_at=old, updated_at=old)
    EventHistory.objects.create(
        model="testapp.scheduledpingpartitioned", row_id=rows[0].pk, at=old, kind=Kind.CANCELLED
    )
    later = now + 400 * DAY  # the "before" partition and the premade ones all lie past retention

    result = purge_model(ScheduledPingPartitioned, now=later)

    assert result.partitions >= 2
    assert result.deleted == 6
    assert not ScheduledPingPartitioned.objects.exists()
    assert all(p.default for p in partitions(ScheduledPingPartitioned))
    assert purge_orphans(ScheduledPingPartitioned).entries == 1
    assert not EventHistory.objects.filter(model="testapp.scheduledpingpartitioned").exists()


@pytest.mark.django_db
def test_a_partition_holding_a_row_not_done_is_left_to_the_row_wise_purge():
    old = database_now() - 60 * DAY
    done = rows_of(ScheduledPingPartitioned, 3, due_at=old, status=Status.CANCELLED)
    ScheduledPingPartitioned.objects.update(cancelled_at=old, updated_at=old)
    (pending,) = rows_of(ScheduledPingPartitioned, 1, due_at=old)
    later = database_now() + 400 * DAY

    result = purge_model(ScheduledPingPartitioned, now=later)

    assert result.deleted == 3
    assert "scheduled_ping_partitioned_before" in {
        p.name for p in partitions(ScheduledPingPartitioned)
    }
    assert list(ScheduledPingPartitioned.objects.values_list("pk", flat=True)) == [pending.pk]
    assert not ScheduledPingPartitioned.objects.filter(pk__in=[r.pk for r in done]).exists()


@pytest.mark.django_db(transaction=True)
def test_a_row_made_not_done_while_the_drop_waits_for_its_partition_keeps_the_partition():
    """The drop locks a partition before it checks its rows: a writer's open transaction on one
    of them is waited for, and the row it leaves pending is seen by the check."""
    old = database_now() - 60 * DAY
    rows = rows_of(ScheduledPingPartitioned, 3, due_at=old, status=Status.CANCELLED)
    ScheduledPingPartitioned.objects.update(cancelled_at=old, updated_at=old)
    writing = threading.Event()

    def reopen() -> None:
        try:
            with transaction.atomic():
                reopened = ScheduledPingPartitioned.objects.filter(pk=rows[0].pk)
                reopened.update(status=Status.PENDING)
                writing.set()
                time.sleep(0.5)  # the drop's lock waits for this commit
        finally:
            connection.close()

    writer = threading.Thread(target=reopen)
    writer.start()
    assert writing.wait(10)
    result = purge_model(ScheduledPingPartitioned, now=database_now() + 400 * DAY)
    writer.join()

    assert result.deleted == 2  # the other two, row by row
    assert list(ScheduledPingPartitioned.objects.values_list("pk", "status")) == [
        (rows[0].pk, Status.PENDING)
    ]
    assert "scheduled_ping_partitioned_before" in {
        p.name for p in partitions(ScheduledPingPartitioned)
    }


@pytest.mark.django_db(transaction=True)
def test_a_row_lock_that_meets_a_row_moved_to_another_partition_is_taken_where_it_now_is():
    now = database_now()
    (row,) = rows_of(ScheduledPingPartitioned, 1, due_at=now - DAY, status=Status.DELIVERED)
    outcome = {}

    def lock(take):
        try:
            with transaction.atomic():
                outcome[take.__name__] = take()
        except OperationalError as exc:
            outcome[take.__name__] = exc
        finally:
            connection.close()

    def plain():
        return ScheduledPingPartitioned.objects.select_for_update().filter(pk=row.pk).first()

    def retried():
        return locked_row(ScheduledPingPartitioned, row.pk)

    for take in (plain, retried):
        with transaction.atomic():
            mover = ScheduledPingPartitioned.objects.select_for_update().filter(pk=row.pk)
            mover.update(due_at=now + 2 * DAY if take is plain else now - DAY)
            waiter = threading.Thread(target=lock, args=(take,))
            waiter.start()
            waiter.join(0.5)  # it waits for our lock; we commit a row now in another partition
        waiter.join(10)

    assert moved_row(outcome["plain"])  # the race is real: PostgreSQL refuses to follow the row
    assert outcome["retried"].pk == row.pk


@pytest.mark.django_db
@override_settings(SCHEDULING_PARTITIONS={"testapp.ScheduledPing": "1d"})
def test_a_model_declared_partitioned_whose_table_is_not_is_a_warning_naming_the_command():
    (warning,) = check_partitioned_tables(databases=["default"])

    assert isinstance(warning, Warning)
    assert warning.obj is ScheduledPing
    assert "scheduling_partitions convert testapp.ScheduledPing" in warning.hint
    assert check_partitioned_tables(databases=None) == []


@pytest.mark.parametrize("value", [{"testapp.ScheduledPing": "1w"}, ["1d"], {"nolabel": "1d"}])
def test_a_bad_partitions_setting_is_refused_naming_the_setting_and_the_form(value):
    with override_settings(SCHEDULING_PARTITIONS=value):
        (error,) = configuration_errors()

    assert "SCHEDULING_PARTITIONS" in error.msg
    assert '"<N>d" or "<N>h"' in error.msg


@override_settings(SCHEDULING_PARTITIONS={"testapp.Nothing": "1d"})
def test_partitions_setting_naming_no_scheduled_model_is_an_error():
    (error,) = check_partition_labels()

    assert error.id == "scheduling.E008"
    assert "testapp.ScheduledPing" in error.msg


@pytest.mark.django_db
def test_the_status_command_prints_each_partition_with_bounds_rows_and_bytes():
    out = StringIO()
    call_command("scheduling_partitions", "status", stdout=out)

    lines = out.getvalue().splitlines()
    assert "testapp.ScheduledPingPartitioned:" in lines
    assert any("scheduled_ping_partitioned_default  DEFAULT" in line for line in lines)
    assert any("[MINVALUE, " in line and "bytes" in line for line in lines)


@pytest.fixture
def past_boundary(transactional_db):
    """A partition boundary an hour ago, so that due rows lie on both sides: the migration's
    "before" partition (up to the midnight after the session began) is cut there for the test,
    and restored after it."""
    model, table = ScheduledPingPartitioned, ScheduledPingPartitioned._meta.db_table
    before = next(p for p in partitions(model) if p.lower is None)
    cut = (database_now() - timedelta(hours=1)).replace(microsecond=0)
    if before.upper <= cut:  # a session begun before midnight: its boundary is past already
        yield before.upper
        ScheduledPingPartitioned.objects.all().delete()
        return
    recent = f"{table}_recent"
    bounds = (cut.isoformat(), before.upper.isoformat())
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} DETACH PARTITION {before.name}")
        cursor.execute(
            f"ALTER TABLE {table} ATTACH PARTITION {before.name}"
            f" FOR VALUES FROM (MINVALUE) TO ('{bounds[0]}')"
        )
        cursor.execute(
            f"CREATE TABLE {recent} PARTITION OF {table}"
            f" FOR VALUES FROM ('{bounds[0]}') TO ('{bounds[1]}')"
        )
    yield cut
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table}")
        cursor.execute(f"DROP TABLE {recent}")
        cursor.execute(f"ALTER TABLE {table} DETACH PARTITION {before.name}")
        cursor.execute(
            f"ALTER TABLE {table} ATTACH PARTITION {before.name}"
            f" FOR VALUES FROM (MINVALUE) TO ('{bounds[1]}')"
        )


def sweep_while_moving(env, boundary, count):
    """`count` due rows on both sides of `boundary`; a sweeper process delivers them while this
    process moves the next ones due to the other side, again and again. The sweepers' output."""
    from tests.conftest import manage

    ping = PingFactory()
    ScheduledPingPartitioned.objects.bulk_create(
        ScheduledPingPartitioned(ping=ping, due_at=boundary + (-1) ** i * timedelta(minutes=30))
        for i in range(count)
    )
    stop, outputs = threading.Event(), []

    def reschedule():
        side = 1
        while not stop.is_set():
            pending = ScheduledPingPartitioned.objects.pending().order_by("due_at", "pk")
            first = pending.values_list("pk", flat=True)[:300]
            ScheduledPingPartitioned.objects.filter(pk__in=list(first)).reschedule(
                boundary + side * timedelta(minutes=10)
            )
            side = -side
        connection.close()

    mover = threading.Thread(target=reschedule)
    mover.start()
    try:
        while ScheduledPingPartitioned.objects.pending().exists():
            sweeper = manage(env, "sweep", "testapp.ScheduledPingPartitioned")
            outputs.append(sweeper.communicate(timeout=120)[0])
            assert sweeper.returncode == 0, outputs[-1]
    finally:
        stop.set()
        mover.join(30)
    return outputs


@pytest.mark.slow
def test_sweeping_in_another_process_while_due_rows_move_across_a_boundary_loses_and_doubles_none(
    past_boundary, subprocess_env, broker
):
    from tests.faults.conftest import published_ids

    env = {**subprocess_env, "SCHEDULING_BATCH_SIZE": "400"}
    rows, retried = 0, 0
    # The race needs a mover's commit between a claim's snapshot and its lock of that row:
    # rounds until it happened (the first, most often).
    while retried == 0 and rows < 100_000:
        outputs = sweep_while_moving(env, past_boundary, 20_000)
        rows += 20_000
        retried += sum(output.count("moved to another partition") for output in outputs)

    assert retried > 0, "the claim never met a moved row: the race did not happen"
    statuses = set(ScheduledPingPartitioned.objects.values_list("status", flat=True))
    assert statuses == {Status.DELIVERED}
    pks = [event_id.split(":")[1] for event_id in published_ids(broker, "testapp")]
    assert len(pks) == rows  # each row published once
    assert len(set(pks)) == rows


@pytest.mark.django_db
def test_a_converted_occurrence_table_drops_its_one_pending_index_and_still_chains_one_head(broker):
    from scheduling.recurring.models import ScheduledOccurrence
    from tests.scheduling.recurring.conftest import make_schedule, sweep_at

    schedule = make_schedule(cron="*/5 * * * *")
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")

    conversion = convert(ScheduledOccurrence, "1d", concurrently=False)
    delivered = sweep_at(CURRENT_TIME + timedelta(minutes=5)).delivered

    assert conversion.dropped == ["one_pending_occurrence_per_schedule"]
    assert delivered == 1
    pending = schedule.occurrences.filter(status=Status.PENDING)
    assert list(pending.values_list("due_at", flat=True)) == [CURRENT_TIME + timedelta(minutes=10)]


ONLINE_ROWS = """
WITH pings AS (INSERT INTO testapp_ping (name, "group") VALUES ('online', 'a') RETURNING id)
INSERT INTO scheduled_ping (ping_id, due_at, status, version, attempts, cancel_reason,
    last_error, created_at, updated_at)
SELECT pings.id, now() - interval '2 hours' + g * interval '1 second',
    CASE WHEN g % 3 = 0 THEN 'delivered' ELSE 'pending' END, 1, 0, '', '', now(), now()
FROM pings, generate_series(1, 6000) AS g
"""


@pytest.fixture
def own_database(subprocess_env):
    """A database of its own, migrated, for a conversion that must run outside a transaction
    (CREATE INDEX CONCURRENTLY) and so cannot be rolled back after the test."""
    import psycopg

    from tests.scheduling.delivery.test_embedded_mode import run

    name = f"{connection.settings_dict['NAME']}_online"
    db = connection.settings_dict
    admin = f"host={db['HOST']} port={db['PORT']} user={db['USER']} dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as server:
        server.execute(f'DROP DATABASE IF EXISTS "{name}"')
        server.execute(f'CREATE DATABASE "{name}"')
    url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{name}"
    env = {**subprocess_env, "DATABASE_URL": url}
    run(env, "migrate", "-v", "0")
    with psycopg.connect(f"{admin[: admin.rindex('=')]}={name}", autocommit=True) as own:
        yield env, own
    with psycopg.connect(admin, autocommit=True) as server:
        server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.slow
def test_the_command_converts_a_table_with_rows_online_and_its_pending_rows_are_delivered(
    own_database,
):
    from tests.scheduling.delivery.test_embedded_mode import run

    env, own = own_database
    own.execute(ONLINE_ROWS)
    ids = [pk for (pk,) in own.execute("SELECT id FROM scheduled_ping ORDER BY id").fetchall()]
    due = own.execute("SELECT count(*) FROM scheduled_ping WHERE status = 'pending'").fetchone()

    output = run(env, "scheduling_partitions", "convert", "testapp.ScheduledPing")
    swept = run(env, "sweep", "testapp.ScheduledPing")

    assert "CONCURRENTLY" not in output  # the steps print as named in the docs
    assert "build unique index (id, due_at):" in output
    assert "switch (one transaction):" in output
    assert "testapp.ScheduledPing: partitioned; 6000 rows kept" in output
    kind = own.execute("SELECT relkind FROM pg_class WHERE relname = 'scheduled_ping'").fetchone()
    assert kind == ("p",)
    after = [pk for (pk,) in own.execute("SELECT id FROM scheduled_ping ORDER BY id").fetchall()]
    assert after == ids
    assert f"delivered={due[0]}" in swept
    left = own.execute("SELECT count(*) FROM scheduled_ping WHERE status = 'pending'").fetchone()
    assert left == (0,)
