"""A busy database is a 503 "busy" with Retry-After, not a 500 (docs/operations.md, "A busy
database"): a statement that waited past its lock_timeout or ran past its statement_timeout, a
connection pool with none free, a server at max_connections. The database is up; the request
was not done and may be sent again. The API answers through DRF's exception handler
(`api_exception_handler`), every other page (the admin) through `BusyDatabaseMiddleware`.
"""

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.html import format_html
from rest_framework.response import Response
from rest_framework.views import exception_handler, set_rollback

RETRY_AFTER = 5  # seconds: long enough for a burst to drain, short for a person
# PostgreSQL's SQLSTATEs for "wait and try again" (psycopg's `sqlstate`, psycopg2's `pgcode`).
BUSY_STATES = {
    "55P03": "a lock wait past lock_timeout",  # lock_not_available
    "57014": "a statement past statement_timeout",  # query_canceled
    "53300": "too many connections",  # too_many_connections
}
POOL_EXHAUSTED = "no free connection in the pool"


def busy_reason(exc: BaseException) -> str | None:
    """What makes the database busy, if `exc` (a Django database error, or the driver's error
    it wraps) says it is; None for any other error."""
    for error in (exc, exc.__cause__):
        reason = _driver_reason(error) if error is not None else None
        if reason:
            return reason
    return None


def _driver_reason(error: BaseException) -> str | None:
    # psycopg_pool's PoolTimeout, named rather than imported: the framework needs no pool.
    if any(kind.__name__ == "PoolTimeout" for kind in type(error).__mro__):
        return POOL_EXHAUSTED
    state = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
    if state in BUSY_STATES:
        return BUSY_STATES[state]
    # A refused connection carries no SQLSTATE, only the server's words.
    return BUSY_STATES["53300"] if "too many clients" in str(error) else None


def busy_detail(reason: str) -> str:
    return (
        f"The database is busy ({reason}): the request was not completed."
        f" Try again in {RETRY_AFTER} s."
    )


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """REST_FRAMEWORK["EXCEPTION_HANDLER"]: DRF's own, and a busy database's 503."""
    reason = busy_reason(exc)
    if reason is None:
        return exception_handler(exc, context)
    set_rollback()
    headers = {"Retry-After": str(RETRY_AFTER)}
    return Response({"detail": busy_detail(reason)}, status=503, headers=headers)


class BusyDatabaseMiddleware:
    """A view that met a busy database answers 503 with Retry-After: an HTML page, or JSON for
    a client that prefers it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        reason = busy_reason(exception)
        return None if reason is None else busy_response(request, reason)


def busy_response(request: HttpRequest, reason: str) -> HttpResponse:
    detail = busy_detail(reason)
    if request.get_preferred_type(["text/html", "application/json"]) == "application/json":
        response: HttpResponse = JsonResponse({"detail": detail}, status=503)
    else:
        page = format_html("<!doctype html><title>Busy</title><h1>Busy</h1><p>{}</p>", detail)
        response = HttpResponse(page, status=503)
    response["Retry-After"] = str(RETRY_AFTER)
    return response


def connect_past_the_pool(connection: Any) -> None:
    """For a Django PostgreSQL connection whose pool had none free: one connection of its own,
    closed at once. Raises the driver's error when the server is down; returns when it answers
    (or refuses only because it is full), so the database is busy, not down."""
    try:
        connection.Database.connect(**connection.get_connection_params()).close()
    except connection.Database.Error as exc:
        if busy_reason(exc) is None:
            raise
