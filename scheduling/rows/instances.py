"""Model instances for the sweep's rows and the rows they relate to, built for a fraction of
what the ORM spends on each.

A claimed batch is a thousand rows, and a recurring occurrence brings its schedule along:
`Model.__init__` walks every field for every row, and `prefetch_related_objects` compiles an
`IN` of a thousand parameters for each relation, together most of an occurrence's cost in the
sweeping process. Filling `__dict__` builds the same instance as `from_db` does, where nothing
can observe the difference (no custom `__init__`, no init signals); a model with a custom
`from_db` keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from django.db import connections
from django.db.models import ForeignKey, JSONField, Model, prefetch_related_objects, signals
from django.db.models.base import ModelState

from scheduling.rows import arrays


def init_unobserved(model: type[Model]) -> bool:
    """Whether skipping `__init__` changes nothing: Django's own, and no init signals."""
    return (
        model.__init__ is Model.__init__
        and not signals.pre_init.has_listeners(model)
        and not signals.post_init.has_listeners(model)
    )


def plain_init(model: type[Model]) -> bool:
    """Whether an instance may be built without `__init__` or `from_db`."""
    from_db = model.from_db.__func__  # type: ignore[attr-defined]
    return from_db is Model.from_db.__func__ and init_unobserved(model)  # type: ignore[attr-defined]


def filled(
    model: type[Model], columns: Sequence[str], row: Iterable[Any], alias: str | None
) -> Any:
    """One instance from a row of `columns` (attnames), as `from_db` would build it; call only
    where `__init__` does nothing more (plain_init, or a from_db that checked the same)."""
    instance = model.__new__(model)
    instance.__dict__.update(zip(columns, row, strict=True))
    state = instance._state = ModelState()
    state.adding, state.db = False, alias
    return instance


def build_instances(
    model: type[Model], columns: Sequence[str], rows: Iterable[Sequence[Any]], alias: str
) -> list[Any]:
    """Instances for rows of `columns`; the columns not read are left deferred."""
    if not plain_init(model):
        return [model.from_db(alias, columns, row) for row in rows]
    return [filled(model, columns, row, alias) for row in rows]


def attach_related(model: type[Model], events: list[Any], paths: Sequence[str], alias: str) -> None:
    """Each event's related object of every path, one query a path for the whole batch; a
    forward foreign key is read by its ids in one array parameter, anything else (a nested
    path) through `prefetch_related_objects`."""
    for path in paths:
        field = model._meta.get_field(path) if "__" not in path else None
        if isinstance(field, ForeignKey) and field.target_field.primary_key:
            attach_foreign_key(field, events, alias)
        else:
            prefetch_related_objects(events, path)


def attach_foreign_key(field: ForeignKey, events: list[Any], alias: str) -> None:
    related: type[Model] = field.related_model  # type: ignore[assignment]
    ids = {getattr(event, field.attname) for event in events} - {None}
    by_pk = {instance.pk: instance for instance in fetch_by_pk(related, ids, alias)}
    for event in events:
        field.set_cached_value(event, by_pk.get(getattr(event, field.attname)))


def fetch_by_pk(model: type[Model], ids: set[Any], alias: str) -> list[Any]:
    """The rows with these primary keys, through the fields' own converters (a JSONField's
    decoder), as instances: every concrete column but those the model names in
    `not_read_by_the_sweep`, which stay deferred (read on first access, as `.only()` leaves
    them)."""
    if not ids:
        return []
    connection = connections[alias]
    skipped = getattr(model, "not_read_by_the_sweep", ())
    fields: list[Any] = [f for f in model._meta.concrete_fields if f.name not in skipped]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in fields)
    table, pk = quote(model._meta.db_table), quote(model._meta.pk.column)
    if connection.vendor == "postgresql":
        primary: Any = model._meta.pk
        key_type = primary.rel_db_type(connection)
        sql = f"SELECT {columns} FROM {table} WHERE {pk} = ANY(%s::{key_type}[])"
        params = [arrays.keys(ids)]
    else:
        marks = ", ".join(["%s"] * len(ids))
        sql, params = f"SELECT {columns} FROM {table} WHERE {pk} IN ({marks})", list(ids)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    converters = [
        (index, faster(converter, field), field.cached_col)
        for index, field in enumerate(fields)
        for converter in [
            *connection.ops.get_db_converters(field.cached_col),
            *field.get_db_converters(connection),
        ]
    ]
    attnames = [field.attname for field in fields]
    return build_instances(model, attnames, converted(rows, converters, connection), alias)


def faster(converter: Any, field: Any) -> Any:
    """A plain JSONField's decoding by orjson (several times json's speed: a schedule has two
    such columns), the same values; anything orjson refuses (an integer past 64 bits) goes to
    the field's own converter. Any other converter as it is."""
    plain_json = (
        isinstance(field, JSONField)
        and field.decoder is None
        and getattr(converter, "__func__", None) is JSONField.from_db_value
    )
    if not plain_json:
        return converter

    def decode(value: Any, expression: Any, connection: Any) -> Any:
        if isinstance(value, str):
            try:
                return orjson.loads(value)
            except orjson.JSONDecodeError:
                pass
        return converter(value, expression, connection)

    return decode


def converted(
    rows: list[tuple[Any, ...]], converters: list[tuple[int, Any, Any]], connection: Any
) -> Iterable[Sequence[Any]]:
    if not converters:
        return rows
    out = []
    for row in rows:
        values = list(row)
        for index, converter, expression in converters:
            values[index] = converter(values[index], expression, connection)
        out.append(values)
    return out


def quick_from_db(
    model: type[Model], alias: str | None, field_names: Sequence[str], values: Sequence[Any]
) -> Any | None:
    """What `Model.from_db` builds (the fields not read deferred), without `__init__`; None
    where that would differ (a custom `__init__`, init signals): then the caller's
    `super().from_db()`."""
    return filled(model, field_names, values, alias) if init_unobserved(model) else None
