"""Who changes a scheduled row: the name each history entry records.

Business code is `code` unless it names itself:

    with scheduling.actor("billing-sync"):
        ScheduledPurchase.objects.filter(purchase__customer=customer).cancel("refund")

The admin names its signed-in user, the REST API its authenticated user, and the sweep, the
reconciliation and the workers themselves with their host name.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

CODE = "code"
MAX_LENGTH = 200

_current: ContextVar[str | None] = ContextVar("scheduling_actor", default=None)


def current_actor() -> str:
    return _current.get() or CODE


@contextmanager
def actor(name: str) -> Iterator[str]:
    """Changes made inside the block are recorded as made by `name`."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"an actor is a non-empty name, e.g. 'billing-sync'; got {name!r}")
    token = _current.set(name.strip()[:MAX_LENGTH])
    try:
        yield name
    finally:
        _current.reset(token)


def process_actor(role: str) -> str:
    """A framework process: `sweep@host`, `reconcile@host`, `worker@host`."""
    return f"{role}@{socket.gethostname()}"[:MAX_LENGTH]


def user_actor(via: str, user: object, *, token: bool = False) -> str:
    """A person: `admin:alice`, `api:alice`, `api:alice (token)`."""
    name = getattr(user, "get_username", lambda: str(user))()
    return f"{via}:{name}{' (token)' if token else ''}"[:MAX_LENGTH]
