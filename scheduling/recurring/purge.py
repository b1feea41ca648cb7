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
