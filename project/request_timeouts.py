"""The web's database budgets: a request's statements on PostgreSQL run with a lock_timeout and a
statement_timeout (DATABASE_LOCK_TIMEOUT, DATABASE_STATEMENT_TIMEOUT; docs/operations.md), so a
request queued behind a held row lock, or one slow search, gives its connection back within a
known time; scheduling.ops.busy turns either timeout into a 503 "busy" with Retry-After.

Why a middleware, not `-c lock_timeout=...` in DATABASES' OPTIONS: the web, workers, beat, the
sweep and management commands read the same settings module, and only requests get these
budgets (a sweep, a purge or a migration keeps the server's, and its own). The values are set on
a request's first statement on each connection (a request that reads no database pays nothing)
and reset when it ends, so a connection that outlives the request (CONN_MAX_AGE, the pool, a
test's) goes back to its own values.
"""

from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, HttpResponse


class DatabaseTimeouts:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        budgets = [
            Budget(connection) for connection in connections.all() if on_postgresql(connection)
        ]
        with ExitStack() as stack:
            for budget in budgets:
                stack.enter_context(budget.connection.execute_wrapper(budget))
            try:
                return self.get_response(request)
            finally:
                for budget in budgets:
                    budget.reset()


def on_postgresql(connection: Any) -> bool:
    return bool(connection.vendor == "postgresql")


def milliseconds(setting: str) -> str:
    return str(round(float(getattr(settings, setting)) * 1000))


class Budget:
    """An execute wrapper: before a request's first statement on `connection`, its timeouts."""

    SET = "SELECT set_config('lock_timeout', %s, false), set_config('statement_timeout', %s, false)"

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.set_on: Any = None  # the driver's connection the values were set on
        # Set inside a transaction, they are undone if it rolls back: set again after it.
        self.in_transaction = False

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        stale = self.in_transaction and not self.connection.in_atomic_block
        if self.set_on is not self.connection.connection or stale:
            values = [
                milliseconds("DATABASE_LOCK_TIMEOUT"),
                milliseconds("DATABASE_STATEMENT_TIMEOUT"),
            ]
            # The driver's cursor: not a query of the request's own (logs, assertNumQueries).
            with self.connection.wrap_database_errors:
                context["cursor"].cursor.execute(self.SET, values)
            self.set_on = self.connection.connection
            self.in_transaction = self.connection.in_atomic_block
        return execute(sql, params, many, context)

    def reset(self) -> None:
        raw = self.set_on
        if raw is None or raw is not self.connection.connection or raw.closed:
            return
        try:
            with raw.cursor() as cursor:
                cursor.execute("RESET lock_timeout; RESET statement_timeout")
        except self.connection.Database.Error:
            pass  # a connection the request broke: Django closes it at the request's end
