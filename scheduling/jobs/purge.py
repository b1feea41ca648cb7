"""What the retention purge does with keyed jobs (registered in apps.py).

Runs are scheduled rows, purged like any other, and keep nothing. job_put() does not schedule
again an instant whose run was delivered, so a retried PUT publishes nothing twice; it knows
that from the runs, so once a delivered run is purged, a PUT naming that instant again
schedules it anew and, being in the past, it is delivered at once. That memory lasts
SCHEDULING_KEEP_DONE_DAYS (7 days by default): far beyond any retry of a request, and a client
sending instants more than a week old is sending a new request. Keeping every delivered run
instead would let the table grow without end, so a host whose clients replay old instants
raises the retention.

A job goes once its runs have been purged and nobody has written it for
SCHEDULING_KEEP_DONE_DAYS; a PUT of its key after that creates it anew. Every write of a job
saves it (updated_at), and the purge locks the job (SKIP LOCKED), so a PUT adding runs either
commits first, and the job no longer matches when locked, or waits and then creates the job
again.
"""

from typing import Any

from django.db.models import Model

from scheduling.rows.databases import connection_of


def job_left_alone(model: type[Model]) -> str:
    """A keyed job none of whose runs is left, unchanged for the done retention: SQL over the
    alias `t`."""
    meta: Any = model._meta
    runs = connection_of(model).ops.quote_name(meta.get_field("runs").related_model._meta.db_table)
    return (
        "t.updated_at < %(done_before)s"
        f" AND NOT EXISTS (SELECT 1 FROM {runs} r WHERE r.job_id = t.id)"
    )
