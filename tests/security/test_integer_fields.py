"""Every integer a client sends fits its column at the API: a 400 naming the field, never the
database's "integer out of range". The walk covers every serializer of the site, nested ones
and list items included, with 2**31 (past a 32-bit column), 2**63 (past a 64-bit one) and -1."""

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import models
from django.urls import get_resolver
from rest_framework import serializers

from scheduling.ops.api.serializers import column_range
from tests.security.test_bad_input import refused

pytestmark = pytest.mark.django_db

VALUES = (2**31, 2**63, -1)
LARGEST = 2**63 - 1  # no column holds more
OURS = ("scheduling", "purchases", "trainings", "project")


def subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)


def site_serializers() -> list[serializers.Serializer]:
    get_resolver().url_patterns  # noqa: B018  (importing the routes builds the generic ones)
    found = []
    for cls in set(subclasses(serializers.Serializer)):
        if not cls.__module__.startswith(OURS):
            continue
        try:
            instance = cls()
            instance.fields  # noqa: B018  (an abstract base has no model: skipped)
        except AssertionError:
            continue
        found.append(instance)
    return found


def writable(field: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(path, field) of each writable leaf field under `field`."""
    if isinstance(field, serializers.ListSerializer | serializers.ListField):
        yield from writable(field.child, f"{path}[]")
    elif isinstance(field, serializers.Serializer):
        for name, child in field.fields.items():
            yield from writable(child, f"{path}.{name}" if path else name)
    elif not field.read_only:
        yield path, field


def integer_fields() -> list[tuple[str, serializers.IntegerField, int]]:
    """Each writable IntegerField, named, with the most its column holds."""
    found = []
    for serializer in site_serializers():
        for path, field in writable(serializer, ""):
            if isinstance(field, serializers.IntegerField):
                found.append((f"{type(serializer).__name__}.{path}", field, column_most(field)))
    return found


def column_most(field: serializers.IntegerField) -> int:
    model = getattr(getattr(field.parent, "Meta", None), "model", None)
    try:
        column = model._meta.get_field(field.source) if model else None
    except Exception:
        column = None
    return column_range(column)[1] if isinstance(column, models.IntegerField) else LARGEST


def test_the_walk_finds_the_integer_fields_clients_send():
    names = {name for name, _, _ in integer_fields()}

    assert {"ScheduleSerializer.max_fires", "AnswerRequestSerializer.player"} <= names
    assert "ReleaseSerializer.tracks[].position" in names


def test_every_integer_field_refuses_what_its_column_cannot_hold():
    accepted_out_of_range = []
    for name, field, most in integer_fields():
        assert field.max_value is not None, name
        assert field.max_value <= most, name
        assert field.min_value is not None, name
        for value in VALUES:
            try:
                field.run_validation(value)
            except serializers.ValidationError:
                continue
            if not field.min_value <= value <= most:
                accepted_out_of_range.append((name, value))

    assert accepted_out_of_range == []


def test_every_related_id_past_any_column_is_refused():
    related = [
        (path, field)
        for serializer in site_serializers()
        for path, field in writable(serializer, "")
        if isinstance(field, serializers.PrimaryKeyRelatedField | serializers.ManyRelatedField)
    ]
    assert related  # the purchases' customer and release, a training's team...
    for _, field in related:
        for value in (2**63, -1):  # 2**31 fits a bigint id: no such row, or one made later
            given = [value] if isinstance(field, serializers.ManyRelatedField) else value
            with pytest.raises(serializers.ValidationError):
                field.run_validation(given)


@pytest.mark.parametrize("value", VALUES)
def test_max_fires_out_of_range_is_a_400_naming_it(api, world, value):
    body = {"name": "capped", "cron": "0 9 * * *", "queue": "q", "max_fires": value}

    body = refused(api.post("/api/schedules/", body, format="json"), "max_fires")

    assert "from 1 to 2,147,483,647" in str(body["max_fires"])


@pytest.mark.parametrize("value", [2**63, 0])
def test_an_answers_player_out_of_range_is_a_400_naming_it(api, world, value):
    url = f"/api/trainings/{world.ids['trainings']}/answers/"
    refused(api.post(url, {"player": value, "phase": "pre"}, format="json"), "player")


@pytest.mark.parametrize("value", [2**63, -1, "\uff11"])
def test_a_purchases_customer_out_of_range_is_a_400_naming_it(api, world, value):
    body = {"customer": value, "release": int(world.ids["releases"])}
    refused(api.post("/api/purchases/", body, format="json"), "customer")
