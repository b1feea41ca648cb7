"""The generic API's filter for each kind of plain field: exact match, and a value the column
cannot hold refused by the form (a 400 naming the field), never sent to the database."""

from __future__ import annotations

from typing import Any

import django_filters  # type: ignore[import-untyped]
import pytest
from django import forms
from django.db import models

from scheduling.ops.api.generic import plain_filter


def named(field: models.Field[Any, Any], name: str) -> models.Field[Any, Any]:
    field.set_attributes_from_name(name)
    return field


def test_a_boolean_field_filters_by_true_or_false():
    flag = plain_filter(named(models.BooleanField(), "urgent"))

    assert isinstance(flag, django_filters.BooleanFilter)
    assert flag.field.clean("true") is True
    assert flag.field.clean("false") is False


def test_an_integer_field_refuses_what_its_column_cannot_hold():
    priority = plain_filter(named(models.SmallIntegerField(), "priority"))

    assert priority.field.clean("7") == 7
    for value in ("1.5", "40000", "nope"):
        with pytest.raises(forms.ValidationError):
            priority.field.clean(value)


def test_a_choices_field_accepts_only_its_values():
    kind = plain_filter(
        named(models.CharField(max_length=10, choices=[("survey", "Survey")]), "kind")
    )

    assert isinstance(kind, django_filters.ChoiceFilter)
    assert kind.field.clean("survey") == "survey"
    with pytest.raises(forms.ValidationError):
        kind.field.clean("poll")


def test_a_text_field_matches_exactly_and_refuses_a_nul():
    queue = plain_filter(named(models.CharField(max_length=100), "target_queue"))

    assert (queue.field_name, queue.lookup_expr) == ("target_queue", "exact")
    with pytest.raises(forms.ValidationError):
        queue.field.clean("a\x00b")
