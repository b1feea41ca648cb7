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
    each row (37 s for a day of 2,010,000 at 30M). Here one anti-join sets aside the rows a
    later fire follows (one in a later partition, due at or after `%(upper)s`), and only the
    rest meet their schedules. A row followed only by a newer one of the same partition is not
    set aside, but the newer one is not either, and is kept exactly when it would be: so the
    answer, some row kept or none, is the rule's."""
    quote = connection_of(model).ops.quote_name
    table = quote(model._meta.db_table)
    meta: Any = model._meta
    schedules = quote(meta.get_field("schedule").related_model._meta.db_table)
    done = f"NOT t.manual AND t.status <> '{Status.PENDING.value}'"
    return f"""
        WITH unfollowed AS MATERIALIZED (
            SELECT t.schedule_id, t.schedule_version FROM {{partition}} AS t
            WHERE {done} AND NOT EXISTS (
                SELECT 1 FROM {table} AS later
                WHERE later.schedule_id = t.schedule_id
                AND later.schedule_version = t.schedule_version
                AND {done.replace("t.", "later.")} AND later.due_at >= %(upper)s
            )
        )
        SELECT EXISTS (
            SELECT 1 FROM unfollowed AS u
            JOIN {schedules} AS s ON s.id = u.schedule_id AND s.version = u.schedule_version
        )"""
