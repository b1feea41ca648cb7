"""Payload templates: JSON whose strings may contain `${variable}`, filled in at publish time.

Variables come from the fire time in the schedule's time zone. Times are ISO 8601 with the
zone's offset and milliseconds; dates are YYYY-MM-DD. `$${` writes a literal `${`.
Only string values are rendered; keys are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import date, datetime, time, timedelta
from typing import Any

from scheduling.jsonvalues import json_has_nul
from scheduling.recurring.cron import time_zone, to_utc

VARIABLE = re.compile(r"\$\$\{|\$\{([^}]*)\}")
OPEN = re.compile(r"(?<!\$)\$\{")


class TemplateError(ValueError):
    """A template that cannot be rendered; the message says where and why."""


def _iso(value: datetime) -> str:
    return value.isoformat(timespec="milliseconds")


def _midnight(day: date, tz: str) -> datetime:
    # A zone whose clocks jump at midnight has no 00:00 that day; the DST policy applies.
    zone = time_zone(tz)
    return to_utc(datetime.combine(day, time()), zone).astimezone(zone)


VARIABLES: dict[str, Callable[[datetime, str, str], str]] = {
    "processTime": lambda local, tz, name: _iso(local),
    "startOfHour": lambda local, tz, name: _iso(local.replace(minute=0, second=0, microsecond=0)),
    "startOfDay": lambda local, tz, name: _iso(_midnight(local.date(), tz)),
    "startOfPreviousDay": lambda local, tz, name: _iso(
        _midnight(local.date() - timedelta(days=1), tz)
    ),
    "endOfPreviousDay": lambda local, tz, name: _iso(
        _midnight(local.date(), tz) - timedelta(milliseconds=1)
    ),
    "startOfDayOneWeekAgo": lambda local, tz, name: _iso(
        _midnight(local.date() - timedelta(days=7), tz)
    ),
    "todaysDate": lambda local, tz, name: local.date().isoformat(),
    "yesterdaysDate": lambda local, tz, name: (local.date() - timedelta(days=1)).isoformat(),
    "scheduleName": lambda local, tz, name: name,
}


def validate_template(template: Any) -> None:
    """Raise TemplateError for an unknown variable or an unterminated `${`, naming where."""
    if json_has_nul(template):
        raise TemplateError("null characters are not allowed (PostgreSQL cannot store them)")
    for path, text in _strings(template, "$"):
        for match in VARIABLE.finditer(text):
            if match[1] is not None and match[1] not in VARIABLES:
                known = ", ".join(VARIABLES)
                raise TemplateError(
                    f"unknown variable ${{{match[1]}}} at {path}; known variables: {known}"
                )
        if OPEN.search(VARIABLE.sub("", text)):
            raise TemplateError(f"unterminated ${{ at {path}; write ${{name}}, or $${{ for ${{")


def render(template: Any, *, fire_time: datetime, tz: str, schedule_name: str) -> Any:
    """The template with every `${variable}` filled in for this fire time."""
    local = fire_time.astimezone(time_zone(tz))
    cache: dict[str, str] = {}

    def value(match: re.Match[str]) -> str:
        name = match[1]
        if name is None:
            return "${"
        if name not in cache:
            cache[name] = VARIABLES[name](local, tz, schedule_name)
        return cache[name]

    return _map_strings(template, lambda text: VARIABLE.sub(value, text) if "$" in text else text)


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def _map_strings(value: Any, function: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return function(value)
    if isinstance(value, dict):
        return {key: _map_strings(item, function) for key, item in value.items()}
    if isinstance(value, list):
        return [_map_strings(item, function) for item in value]
    return value
