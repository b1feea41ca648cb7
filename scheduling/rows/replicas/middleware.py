"""ReplicaReadsMiddleware: safe requests may read from replicas; after an unsafe request the
primary's WAL position is remembered for its client (read-your-writes)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse

from scheduling.rows.replicas.choice import ReadState, client_of
from scheduling.rows.replicas.conf import read_replicas
from scheduling.rows.replicas.positions import StoreDown, primary_position, remember_write
from scheduling.rows.replicas.state import serving

log = logging.getLogger("scheduling.replicas")

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
View = TypeVar("View", bound=Callable[..., Any])


def reads_primary(view: View) -> View:
    """Marks a view whose reads must see the primary even on GET (/healthz, /metrics)."""
    view.reads_primary = True  # type: ignore[attr-defined]
    return view


class ReplicaReadsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        read_replicas()  # a bad SCHEDULING_READ_REPLICAS stops the server at start

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not read_replicas():
            return self.get_response(request)
        if request.method in SAFE_METHODS:
            token = serving.set(ReadState(request))
            try:
                return self.get_response(request)
            finally:
                serving.reset(token)
        response = self.get_response(request)
        remember_writes(request)
        return response

    def process_view(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
    ) -> None:
        state = serving.get()
        if state is not None and getattr(view, "reads_primary", False):
            state.enabled = False


def remember_writes(request: HttpRequest) -> None:
    """Whatever the answer (a refused request may have written before it failed), the
    primary's position now covers every commit the request made."""
    client = client_of(request)
    if client is None:
        return
    for alias in read_replicas():
        try:
            remember_write(client, alias, primary_position(alias))
        except StoreDown:  # logged once per outage
            continue
        except DatabaseError as exc:  # the primary is down: the request has failed too
            log.warning("read replicas: no WAL position from %r after a write (%s)", alias, exc)
