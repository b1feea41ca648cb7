"""ReplicaRouter: first in DATABASE_ROUTERS. It sends a read to a replica of the model's write
alias only while ReplicaReadsMiddleware serves a safe request; otherwise it answers nothing and
the next router (or Django's default) decides."""

from __future__ import annotations

from typing import Any

from django.db import connections, router
from django.db.models import Model

from scheduling.rows.replicas.conf import is_replica, primary_of
from scheduling.rows.replicas.state import current_state

# Credentials and sessions are read from the primary: a new token or a fresh sign-in works on
# the next request whatever the lag, and the client (whose writes it must see) is known before
# any read goes to a replica.
PRIMARY_APPS = frozenset({"auth", "authtoken", "sessions", "axes"})


class ReplicaRouter:
    def db_for_read(self, model: type[Model], **hints: Any) -> str | None:
        state = current_state()
        if state is None or model._meta.app_label in PRIMARY_APPS:
            return None
        write_alias = router.db_for_write(model, **hints)
        # A transaction open on the primary reads what it wrote, and what it locks.
        if connections[write_alias].in_atomic_block:
            return None
        return state.replica_for(write_alias)

    def db_for_write(self, model: type[Model], **hints: Any) -> str | None:
        """A row read from a replica is saved on its primary (Django would pick the row's own
        database); otherwise the next router decides."""
        instance = hints.get("instance")
        db = getattr(getattr(instance, "_state", None), "db", None)
        return primary_of(db) if db and is_replica(db) else None

    def allow_relation(self, obj1: Model, obj2: Model, **hints: Any) -> bool | None:
        """Rows of a replica and of its primary are the same rows."""
        first, second = obj1._state.db, obj2._state.db
        if first and second and first != second and primary_of(first) == primary_of(second):
            return True
        return None

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        """Replicas follow their primary's schema; migrate never runs on one."""
        return False if is_replica(db) else None
