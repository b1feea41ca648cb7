"""A partition of recurring occurrences is dropped only when the keep rule keeps none of its
rows (a schedule's newest fire of its current version): the rule's set-based form, one statement
a partition, answers as the row-by-row rule does in every case."""

from datetime import timedelta

import pytest
from django.db import connection

from scheduling.recurring.models import ScheduledOccurrence
from scheduling.recurring.purge import latest_fire_in_partition
from scheduling.rows.clock import database_now
from scheduling.rows.partitions import DuePartitions, convert, maintain, partitions
from scheduling.rows.partitions.retention import (
    Rule,
    all_match,
    all_purgeable,
    bounds,
    whole_partition_plans,
)
from scheduling.rows.purge import purge_model
from scheduling.rows.retention import cutoff_params, cutoffs, done_condition
from tests.scheduling.recurring.conftest import make_schedule

quote_name = connection.ops.quote_name

DAY = timedelta(days=1)
OLD = 60 * DAY  # rows this old lie in the partition made for the rows before the conversion
AFTER = 30 * DAY  # a row due this far ahead lies past the partition of the rows before
LATER = 400 * DAY  # a purge this far ahead finds every partition past retention
NEXT = "next"  # due in the partition right after the old one: where the rule looks first

INSERT = """
INSERT INTO scheduled_occurrence (schedule_id, schedule_version, due_at, missed_run, catch_up,
    manual, status, version, attempts, cancel_reason, last_error, created_at, updated_at,
    delivered_at, cancelled_at)
VALUES (%s, %s, %s, 0, false, %s, %s, 1, 1, '', '', %s, %s, %s, %s)
"""


def occurrence(schedule, due_at, *, status="delivered", version=None, manual=False):
    at = due_at
    delivered = at if status == "delivered" else None
    cancelled = at if status == "cancelled" else None
    version = schedule.version if version is None else version
    with connection.cursor() as cursor:
        cursor.execute(
            INSERT, [schedule.pk, version, due_at, manual, status, at, at, delivered, cancelled]
        )


def old_partition():
    (partition,) = [p for p in partitions(ScheduledOccurrence) if p.name.endswith("_before")]
    return partition


def both_answers(now):
    """(row by row, set-based): how many rows the old partition holds if all are purgeable."""
    limits = cutoffs(now + LATER)
    partition = old_partition()
    params = {
        **cutoff_params(limits, ScheduledOccurrence),
        **bounds(partition, partitions(ScheduledOccurrence)),
        "label": "x",
    }
    assert params["next_upper"] > partition.upper  # a day partition follows: NEXT lies in it
    rule = Rule(
        done=done_condition(ScheduledOccurrence, kept_too=False),
        purgeable=done_condition(ScheduledOccurrence),
        kept_in_partition=latest_fire_in_partition(ScheduledOccurrence),
    )
    row_by_row = all_match(connection, partition.name, rule.purgeable, params)
    return row_by_row, all_purgeable(connection, partition, rule, params)


def disabled(**fields):
    """A schedule without a pending occurrence of its own: the test writes its rows."""
    schedule = make_schedule(enabled=False, **fields)
    ScheduledOccurrence.objects.filter(schedule=schedule).delete()
    return schedule


def converted():
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    convert(ScheduledOccurrence, "1d", concurrently=False)
    # Day partitions past the old one's bound, short of AFTER (which the DEFAULT one takes).
    maintain(ScheduledOccurrence, spec=DuePartitions(interval=DAY, premake=20))


CASES = {
    # the schedule's newest fire is in a later day: nothing here is kept
    "followed by a later fire": ([-OLD, -OLD + DAY / 2, AFTER], True),
    # its newest fire (however it ended) is here: kept, the partition stays
    "newest fire here": ([-OLD - DAY, -OLD], False),
    "newest fire here, cancelled": ([-OLD - DAY, ("cancelled", -OLD)], False),
    # only manual triggers and older versions here: nothing kept
    "manual trigger": ([("manual", -OLD)], True),
    "older version": ([("v0", -OLD)], True),
    "older version here, current one later": ([("v0", -OLD), AFTER], True),
    # the next partition, read first, follows it or not
    "followed in the next partition": ([-OLD, NEXT], True),
    "followed in the next partition and after it": ([-OLD, NEXT, AFTER], True),
    "followed in the next partition by an older version only": ([-OLD, ("v0", NEXT)], False),
    "followed in the next partition by a manual trigger only": ([-OLD, ("manual", NEXT)], False),
    "followed in the next partition by a pending fire only": ([-OLD, ("pending", NEXT)], False),
    "an older version followed in the next partition, the current one not": (
        [("v0", -OLD), ("v0", NEXT), -OLD + DAY / 2],
        False,
    ),
}


def due(now, offset):
    """`offset` from now, or (NEXT) an hour into the partition after the old one."""
    return old_partition().upper + timedelta(hours=1) if offset == NEXT else now + offset


def written_after_the_conversion(offset):
    return offset == NEXT or offset > timedelta(0)


@pytest.mark.django_db
@pytest.mark.parametrize("case", CASES)
def test_the_set_based_keep_rule_answers_as_the_row_by_row_one(case):
    now = database_now()
    fires, droppable = CASES[case]
    schedule = disabled(cron="0 9 * * *")
    schedule.version = 2
    schedule.save(update_fields=["version"])
    schedule.refresh_from_db()
    fires = [fire if isinstance(fire, tuple) else ("delivered", fire) for fire in fires]
    # Rows written before the conversion lie in its "before" partition; those written after,
    # due later, in a later one: the next day's (NEXT) or the DEFAULT partition (AFTER).
    for written_after in (False, True):
        for kind, offset in fires:
            if written_after_the_conversion(offset) is written_after:
                occurrence(
                    schedule,
                    due(now, offset),
                    status=kind if kind in ("cancelled", "pending") else "delivered",
                    version=schedule.version - 1 if kind == "v0" else schedule.version,
                    manual=kind == "manual",
                )
        if not written_after:
            converted()

    row_by_row, set_based = both_answers(now)

    assert row_by_row == set_based
    assert (set_based is not None) is droppable


@pytest.mark.django_db
def test_a_partition_whose_newest_fires_are_followed_is_dropped_and_one_keeping_one_is_not():
    now = database_now()
    followed, last = disabled(cron="0 9 * * *"), disabled(cron="0 10 * * *")
    for day in (OLD + DAY, OLD):
        occurrence(followed, now - day)
        occurrence(last, now - day)
    converted()
    occurrence(followed, now + AFTER)  # in a later partition

    kept = purge_model(ScheduledOccurrence, now=now + LATER)

    assert old_partition()  # `last`'s newest fire is in it: kept, and the partition with it
    assert ScheduledOccurrence.objects.filter(schedule=last, due_at=now - OLD).exists()
    assert not ScheduledOccurrence.objects.filter(schedule=followed, due_at__lt=now).exists()
    assert kept.deleted == 3  # the rest of the partition went row by row
    occurrence(last, now + AFTER)  # now followed too

    dropped = purge_model(ScheduledOccurrence, now=now + LATER)

    assert dropped.partitions >= 1
    assert not [p for p in partitions(ScheduledOccurrence) if p.name.endswith("_before")]


STALE = 200  # schedules whose fires the statistics still see pending


def keep_rule_plan(params):
    partition = quote_name(old_partition().name)
    statement = latest_fire_in_partition(ScheduledOccurrence).format(partition=partition)
    with whole_partition_plans(connection), connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {statement}", params)
        return "\n".join(line for (line,) in cursor.fetchall())


@pytest.mark.django_db
def test_a_day_whose_statistics_predate_its_deliveries_is_hashed_not_probed_a_row():
    """Straight after a day's deliveries its partition's statistics still see its rows pending
    (until autovacuum analyses it again): planned freely, the keep rule probed the next
    partition's index once a row, two million times at 30M."""
    converted()
    partition = old_partition()
    days = (partition.upper - timedelta(hours=1), partition.upper + timedelta(hours=1))
    for schedule in [disabled(cron="0 9 * * *") for _ in range(STALE)]:
        for due_at in days:  # one in the old partition, its follower in the next
            occurrence(schedule, due_at, status="pending")
    with connection.cursor() as cursor:
        for name in [p.name for p in partitions(ScheduledOccurrence)]:
            cursor.execute(f"ANALYZE {quote_name(name)}")
        cursor.execute(
            "UPDATE scheduled_occurrence SET status = 'delivered', delivered_at = due_at"
            " WHERE due_at = ANY(%s)",
            [list(days)],
        )
    params = bounds(partition, partitions(ScheduledOccurrence))

    plan = keep_rule_plan(params)

    assert "Nested Loop" not in plan
    assert "Hash Anti Join" in plan
