"""Whole numbers from query parameters: ASCII digits only.

Python's int() and str.isdigit() read other scripts' digits (U+0665, U+FF15 are 5) and isdigit()
takes superscripts ("²"), which int() then refuses. Every integer a request names in its query
goes through `whole_number`; filters through AsciiIntegerField and ascii_digits_only.
"""

from __future__ import annotations

import re
from typing import Any

import django_filters  # type: ignore[import-untyped]
from django import forms
from rest_framework import serializers

WHOLE_NUMBER = re.compile(r"[0-9]{1,30}")
NUMBER = re.compile(r"-?[0-9]{1,30}(\.[0-9]{1,30})?")


def whole_number(name: str, value: str, *, low: int, high: int | None = None) -> int:
    """`value` as an int from low to high (None: any); a 400 naming the parameter otherwise."""
    if WHOLE_NUMBER.fullmatch(value) and low <= int(value) and (high is None or int(value) <= high):
        return int(value)
    within = f"from {low} to {high}" if high is not None else f"of at least {low}"
    raise serializers.ValidationError(
        {name: [f"Enter a whole number {within} in digits 0-9; got {value!r:.50}."]}
    )


class AsciiNumberMixin:
    """For a form field reading numbers: a value written in other digits than 0-9 is invalid."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and value.strip() and not NUMBER.fullmatch(value.strip()):
            raise forms.ValidationError("Enter a number in digits 0-9, e.g. 42.", code="invalid")
        return super().to_python(value)  # type: ignore[misc]


class AsciiIntegerField(AsciiNumberMixin, forms.IntegerField):
    pass


class AsciiDecimalField(AsciiNumberMixin, forms.DecimalField):
    pass


ASCII_FIELDS: dict[type[forms.Field], type[forms.Field]] = {
    forms.IntegerField: AsciiIntegerField,
    forms.DecimalField: AsciiDecimalField,
}


def ascii_digits_only(filters: dict[str, django_filters.Filter]) -> None:
    """Make each number filter (NumberFilter, an IntegerField filter) read digits 0-9 only."""
    for each in filters.values():
        ascii_class = ASCII_FIELDS.get(each.field_class)
        if ascii_class is not None:
            each.field_class = ascii_class
            vars(each).pop("_field", None)  # a form field built from the old class
