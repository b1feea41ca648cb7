"""Admin form fields for calendars' lists: one item a line (a date, an RRULE, a window, a
composition step "include <name>"), or names separated by commas."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from scheduling.time.calendars.parsing import OPERATIONS


class LinesField(forms.CharField):
    """A list of strings, one a line."""

    widget: forms.Widget = forms.Textarea(attrs={"rows": 3, "cols": 60})

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(map(self.show, value)) if isinstance(value, list) else value

    def show(self, item: Any) -> str:
        return str(item)

    def to_python(self, value: Any) -> Any:
        return [self.read(line.strip()) for line in self.lines(value) if line.strip()]

    def lines(self, value: Any) -> list[str]:
        return str(value or "").splitlines()

    def read(self, line: str) -> Any:
        return line


class NamesField(LinesField):
    """Names separated by commas or spaces, e.g. "SAT, SUN" or "holidays, weekends"."""

    widget = forms.TextInput(attrs={"size": 60})

    def prepare_value(self, value: Any) -> Any:
        return ", ".join(map(str, value)) if isinstance(value, list) else value

    def lines(self, value: Any) -> list[str]:
        return re.split(r"[\s,]+", str(value or ""))


class StepsField(LinesField):
    """Composition steps, one a line: "include <calendar>" or "exclude <calendar>"."""

    def show(self, item: Any) -> str:
        return f"{item.get('op')} {item.get('calendar')}" if isinstance(item, dict) else str(item)

    def read(self, line: str) -> Any:
        operation, _, name = line.partition(" ")
        if operation not in OPERATIONS or not name.strip():
            raise forms.ValidationError(
                f"{line!r}: enter one step a line, 'include <calendar>' or 'exclude <calendar>'."
            )
        return {"op": operation, "calendar": name.strip()}
