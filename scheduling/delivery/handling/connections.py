"""Workers keep their database connections across tasks, as Django keeps them across requests.

Celery's Django fix-up closes every database connection before and after each task, whatever
CONN_MAX_AGE says, so each event paid for a new PostgreSQL backend (its start and its catalog
warm-up): 2.7 times the cost of the rest of a handling. A worker of a host that runs the
framework instead does what Django does around a request: `close_if_unusable_or_obsolete()` on
each connection, which closes one past its CONN_MAX_AGE, one whose last use raised (if it no
longer answers), or one left in a transaction; with CONN_HEALTH_CHECKS the first query of the
next task checks a kept connection (`SELECT 1`) and reconnects in place before it can fail an
event. A failover, a restart or a killed backend thus costs the next task a reconnection, not a
failure.

CONN_MAX_AGE = 0 (Django's default) keeps Celery's behaviour: the connection closes after
every task. SCHEDULING_WORKER_KEEPS_CONNECTIONS = False turns this off altogether.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery
from django.db import DatabaseError, connections

log = logging.getLogger(__name__)


def keep_connections_between_tasks(app: Celery) -> bool:
    """Replace the Django fix-up's per-task close on `app`'s worker; True when it was found."""
    from celery.fixups.django import DjangoFixup

    for fixup in getattr(app, "_fixups", None) or ():
        if isinstance(fixup, DjangoFixup):
            # on_task_prerun / on_task_postrun look close_database up on the instance at each
            # call, so setting it there is enough; the process start still closes what the
            # parent opened (on_worker_process_init calls _close_database itself).
            fixup.worker_fixup.close_database = close_unusable_or_obsolete
            return True
    return False


def close_unusable_or_obsolete(**kwargs: Any) -> None:
    """What Django's request_started / request_finished do to each open connection."""
    for connection in connections.all(initialized_only=True):
        try:
            connection.close_if_unusable_or_obsolete()
        except DatabaseError:  # a broken connection failing to close is closed enough
            log.debug("closing the unusable connection %s failed", connection.alias, exc_info=True)
