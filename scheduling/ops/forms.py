"""Form fields the admin and the API's filters share."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import forms

from scheduling.time.parsing import DATETIME_EXAMPLE, parse_aware_datetime


class AwareDateTimeFormField(forms.Field):
    """A form field for an ISO 8601 datetime with an offset or Z; naive values are refused."""

    widget = forms.TextInput(attrs={"placeholder": DATETIME_EXAMPLE})

    def to_python(self, value: Any) -> datetime | None:
        if value in self.empty_values:
            return None
        try:
            return parse_aware_datetime(value.strip() if isinstance(value, str) else value)
        except ValueError as exc:
            raise forms.ValidationError(str(exc), code="invalid") from None
