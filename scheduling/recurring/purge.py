"""What the retention purge keeps of recurring schedules' occurrences (registered in apps.py)."""

from typing import Any

from scheduling.rows.databases import connection_of
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.states import Status


def latest_fire(model: type[ScheduledEvent]) -> str:
    """An occurrence a schedule's timeline goes on from: SQL over the alias `t`."""
    # services._next_successors() continues a schedule from its newest non-pending,
    # non-manual occurrence of the current version, however it ended. Without it, a schedule found with
    # no pending occurrence (enabled again, repaired, edited while a sweep skipped it) would
    # restart from now: fire_all would lose the fire times missed in between. So that one row
    # per schedule stays, however old; older ones, other versions and manual triggers go.
    quote = connection_of(model).ops.quote_name
    table = quote(model._meta.db_table)
    meta: Any = model._meta
    schedules = quote(meta.get_field("schedule").related_model._meta.db_table)
    return f"""
        NOT t.manual
        AND t.schedule_version = (SELECT s.version FROM {schedules} s WHERE s.id = t.schedule_id)
        AND NOT EXISTS (
            SELECT 1 FROM {table} newer
            WHERE newer.schedule_id = t.schedule_id AND NOT newer.manual
            AND newer.schedule_version = t.schedule_version
            AND newer.status <> '{Status.PENDING.value}'
            AND (newer.due_at, newer.id) > (t.due_at, t.id)
        )"""


def latest_fire_in_partition(model: type[ScheduledEvent]) -> str:
    """latest_fire() for one partition `{partition}` as one set-based statement: true when a
    row of it is kept. Row by row, the rule probes the schedule and every later partition for
    each row (37 s for a day of 2,010,000 at 30M). Here the rows a later fire follows are set
    aside in two steps. First one anti-join with the next partition's rows (due from
    `%(upper)s` to `%(next_upper)s`), where a daily or hourly schedule's next fire lies: a hash
    of one day's rows, not every later day's. Then the few rows left (a weekly schedule's, the
    newest fire of one disabled) meet their schedule and are looked for in the partitions after
    the next, by index, a row at a time (subqueries, not joins: retention.py plans this
    statement without nested loops). A row followed only by a newer one of the same partition
    is not set aside, but the newer one is not either, and is kept exactly when it would be: so
    the answer, some row kept or none, is the rule's."""
    quote = connection_of(model).ops.quote_name
    table = quote(model._meta.db_table)
    meta: Any = model._meta
    schedules = quote(meta.get_field("schedule").related_model._meta.db_table)
    done = f"NOT t.manual AND t.status <> '{Status.PENDING.value}'"

    def followed(alias: str, within: str) -> str:
        return f"""EXISTS (
            SELECT 1 FROM {table} AS later
            WHERE later.schedule_id = {alias}.schedule_id
            AND later.schedule_version = {alias}.schedule_version
            AND {done.replace("t.", "later.")} AND {within}"""

    next_partition = "later.due_at >= %(upper)s AND later.due_at < %(next_upper)s"
    # MATERIALIZED: with no row left, the partitions after the next are not read at all.
    # OFFSET 0 keeps the second step's EXISTS a subquery: pulled up into an anti-join, it would
    # be hashed over every later partition's rows, for a handful of rows left.
    return f"""
        WITH unfollowed AS MATERIALIZED (
            SELECT t.schedule_id, t.schedule_version FROM {{partition}} AS t
            WHERE {done} AND NOT {followed("t", next_partition)})
        )
        SELECT EXISTS (
            SELECT 1 FROM unfollowed AS u
            WHERE u.schedule_version = (SELECT s.version FROM {schedules} AS s
                WHERE s.id = u.schedule_id)
            AND NOT {followed("u", "later.due_at >= %(next_upper)s")} OFFSET 0)
        )"""
