"""Payload templates: JSON whose strings may contain `${variable}`, filled in at publish time.

Variables come from the fire time in the schedule's time zone. Times are ISO 8601 with the
zone's offset and milliseconds; dates are YYYY-MM-DD. `$${` writes a literal `${`.
Only string values are rendered; keys are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import Any

import orjson

from scheduling.recurring.cron import time_zone, to_utc
from scheduling.rows.conf import scheduling_settings
from scheduling.rows.jsonvalues import JsonValueError, check_json_value
from scheduling.rows.outgoing import dumps

VARIABLE = re.compile(r"\$\$\{|\$\{([^}]*)\}")
OPEN = re.compile(r"(?<!\$)\$\{")
SAMPLE_FIRE = datetime(2000, 1, 1, tzinfo=UTC)


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


def validate_template(
    template: Any, *, max_bytes: int | None = None, schedule_name: str = ""
) -> None:
    """Raise TemplateError for what a keyed job's payload could not hold (scheduling.rows.jsonvalues:
    surrogates, integers beyond 64 bits, depth, size, rendered too; the size limit defaults to
    SCHEDULING_JOB_MAX_PAYLOAD_BYTES), an unknown variable or an unterminated `${`, naming where."""
    if max_bytes is None:
        max_bytes = scheduling_settings().job_max_payload_bytes
    try:
        check_json_value(template, path="payload_template", max_bytes=max_bytes)
    except JsonValueError as exc:
        raise TemplateError(str(exc)) from None
    _check_variables(template)
    # Every fire renders to the same length: times and dates have fixed widths in any zone.
    rendered = render(template, fire_time=SAMPLE_FIRE, tz="UTC", schedule_name=schedule_name)
    size = len(dumps(rendered))
    if size > max_bytes:
        raise TemplateError(
            f"payload_template renders to {size} bytes of JSON at every fire; at most "
            f"{max_bytes}: use fewer or shorter variables."
        )


def _check_variables(template: Any) -> None:
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


def render_shared(template: Any, *, fire_time: datetime, tz: str, schedule_name: str) -> Any:
    """render(), remembered for the schedules that share a template, a fire time and a zone (a
    sweep's batch, typically): the result is shared between them, so read it, never change it."""
    text = dumps(template)
    name = schedule_name if b"scheduleName" in text else ""
    return _rendered(text, fire_time, tz, name)


@lru_cache(maxsize=1024)
def _rendered(text: bytes, fire_time: datetime, tz: str, schedule_name: str) -> Any:
    return render(orjson.loads(text), fire_time=fire_time, tz=tz, schedule_name=schedule_name)


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
