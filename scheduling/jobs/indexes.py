"""The keyed jobs' JSON index, in a module without models: migrations import it, and importing
a models module from a migration would register its models even where the app is not
installed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.postgres.indexes import GinIndex
from django.db import models


class JsonContainmentIndex(GinIndex):
    """A GIN index (jsonb_path_ops) serving `column @> '{...}'`; a plain index elsewhere.

    The embedded mode runs on SQLite, which has no GIN; a plain index there keeps one
    migration for both back ends.
    """

    def __init__(self, *, fields: Sequence[str], name: str) -> None:
        super().__init__(fields=fields, name=name, opclasses=["jsonb_path_ops"])

    def _check_postgres_installed(self, *args: Any) -> list[Any]:
        # Django 6 asks for django.contrib.postgres beside its PostgreSQL indexes (postgres.E005);
        # this one needs nothing of that app, and on SQLite it is a plain index.
        return []

    def deconstruct(self) -> Any:
        path, args, kwargs = super().deconstruct()
        kwargs.pop("opclasses", None)
        return path, args, kwargs

    def create_sql(self, model: Any, schema_editor: Any, using: str = "", **kwargs: Any) -> Any:
        if schema_editor.connection.vendor == "postgresql":
            return super().create_sql(model, schema_editor, using=using, **kwargs)
        plain = models.Index(fields=list(self.fields), name=self.name)
        return plain.create_sql(model, schema_editor, **kwargs)
