"""The one race partitioning adds: a row moved to another partition under a lock taker.

An UPDATE that changes due_at across a partition boundary deletes the row from one partition
and inserts it into another. A `SELECT ... FOR UPDATE [SKIP LOCKED]` whose snapshot still saw
the old version, meeting it after the mover committed, cannot follow it there: PostgreSQL
raises a serialization failure ("tuple to be locked was already moved to another partition due
to concurrent update"), which aborts the transaction. Run again, the statement sees the row
where it now is, so the callers (the sweep's claim, the reconciliation's requeue, a handler's
row lock) retry their unit of work instead of failing.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.db import DatabaseError

log = logging.getLogger("scheduling.sweep")

T = TypeVar("T")
RETRIES = 20
SERIALIZATION_FAILURE = "40001"


def moved_row(exc: BaseException) -> bool:
    """The error of a lock (or update) that met a row moved to another partition."""
    cause = exc.__cause__ or exc
    return getattr(
        cause, "sqlstate", None
    ) == SERIALIZATION_FAILURE and "moved to another partition" in str(cause)


def retrying_moved_rows(run: Callable[[], T], what: str, retries: int = RETRIES) -> T:
    """`run()` (one transaction, or a savepoint) again while it meets moved rows: at once,
    then after a few random milliseconds, so that a mover busy on the same rows (a bulk
    reschedule in slices) gets out of the way."""
    for attempt in range(retries):
        try:
            return run()
        except DatabaseError as exc:
            if not moved_row(exc) or attempt == retries - 1:
                raise
            log.warning("%s met a row moved to another partition; again (%d)", what, attempt + 1)
            time.sleep(random.uniform(0, 0.002 * attempt))
    raise AssertionError("unreachable")


def retried_on_moved_rows(run: Callable[..., T], what: str) -> Callable[..., T]:
    """`run`, whatever its arguments, retried as retrying_moved_rows() does."""

    @wraps(run)
    def retried(*args: Any, **kwargs: Any) -> T:
        return retrying_moved_rows(lambda: run(*args, **kwargs), what)

    return retried
