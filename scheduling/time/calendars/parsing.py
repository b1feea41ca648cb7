"""A calendar's stored values (JSON lists of text) read into typed rules, each refusal naming
the accepted form. Pure: the API, the admin and the model check with the same functions."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr

from scheduling.time.calendars.rules import (
    EXCLUDE,
    INCLUDE,
    CalendarError,
    Component,
    Days,
    Window,
    rule_dates,
)
from scheduling.time.zones import UnknownTimeZone, time_zone

WEEKDAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
RULE_FREQUENCIES = ("YEARLY", "MONTHLY")
# Parts that tie a rule to its start or to times of day: a holiday rule names dates only.
RULE_REFUSED = ("COUNT", "INTERVAL", "DTSTART", "BYHOUR", "BYMINUTE", "BYSECOND")
RULE_DAY_PARTS = ("BYMONTHDAY", "BYDAY", "BYYEARDAY", "BYWEEKNO", "BYEASTER")
WINDOW = re.compile(r"^(\d{2}:\d{2})-(\d{2}:\d{2})$")
# One RRULE per string: dateutil's rrulestr reads a line break as the start of a second rule
# (a smuggled "RRULE:FREQ=MINUTELY"), so only a rule's own characters pass.
RULE_TEXT = re.compile(r"[A-Z0-9=;,+\-]+")
OPERATIONS = (INCLUDE, EXCLUDE)

FORMS = {
    "timezone": "an IANA time zone name, e.g. Europe/Paris",
    "holidays": 'a list of dates, e.g. ["2026-12-25", "2027-01-01"]',
    "holiday_rules": "a list of RFC 5545 RRULEs (FREQ=YEARLY or MONTHLY) naming days, e.g. "
    '["FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=25", "FREQ=YEARLY;BYMONTH=11;BYDAY=4TH"]',
    "daily_windows": 'a list of HH:MM-HH:MM wall-time windows, e.g. ["22:00-07:00"]',
    "weekdays": f'a list of day names from {", ".join(WEEKDAYS)}, e.g. ["SAT", "SUN"]',
    "composition": 'a list of {"op": "include" or "exclude", "calendar": "<name>"}, '
    'e.g. [{"op": "include", "calendar": "public-holidays"}]',
}


def parse_timezone(name: Any) -> ZoneInfo:
    try:
        return time_zone(name)
    except UnknownTimeZone:
        raise CalendarError(f"unknown time zone {name!r}") from None


def parse_holiday(text: Any) -> date:
    try:
        if isinstance(text, str) and len(text) == 10:
            return date.fromisoformat(text)
    except ValueError:
        pass
    raise CalendarError(f"{text!r} is not a date YYYY-MM-DD")


def parse_rule(text: Any) -> str:
    """The rule in upper case, checked: a known frequency, named days, and some date at all."""
    if not isinstance(text, str) or not text.strip():
        raise CalendarError(f"{text!r} is not an RRULE")
    rule = text.strip().upper().removeprefix("RRULE:")
    if not RULE_TEXT.fullmatch(rule):
        raise CalendarError(
            f"{text!r} is not one RRULE: one rule a string, with no line break, space or "
            "second RRULE:"
        )
    parts = dict(part.partition("=")[::2] for part in rule.split(";"))
    if parts.get("FREQ") not in RULE_FREQUENCIES:
        raise CalendarError(f"{text!r}: FREQ must be YEARLY or MONTHLY")
    refused = [name for name in RULE_REFUSED if name in parts]
    if refused:
        raise CalendarError(f"{text!r}: {', '.join(refused)} cannot be used in a holiday rule")
    if not any(name in parts for name in RULE_DAY_PARTS):
        raise CalendarError(f"{text!r}: name the days with BYMONTHDAY, BYDAY or BYYEARDAY")
    try:
        first = rrulestr(rule, dtstart=datetime(1970, 1, 1)).after(datetime(1970, 1, 1), inc=True)
    except (ValueError, TypeError, IndexError) as exc:
        raise CalendarError(f"{text!r}: {exc}") from None
    if first is None:
        raise CalendarError(f"{text!r} never falls on a date")
    return rule


def parse_window(text: Any) -> tuple[time, time]:
    match = WINDOW.match(text) if isinstance(text, str) else None
    try:
        if match is not None:
            start, end = time.fromisoformat(match[1]), time.fromisoformat(match[2])
            if start != end:
                return start, end
    except ValueError:
        pass
    raise CalendarError(f"{text!r} is not a window HH:MM-HH:MM with two different times")


def parse_weekday(text: Any) -> int:
    name = text.strip().upper()[:3] if isinstance(text, str) else ""
    if name not in WEEKDAYS:
        raise CalendarError(f"{text!r} is not a day name")
    return WEEKDAYS.index(name)


def parse_step(step: Any) -> tuple[str, str]:
    if (
        isinstance(step, dict)
        and set(step) == {"op", "calendar"}
        and step["op"] in OPERATIONS
        and isinstance(step["calendar"], str)
        and step["calendar"]
    ):
        return step["op"], step["calendar"]
    raise CalendarError(f"{step!r} is not a step")


PARSERS: dict[str, Callable[[Any], Any]] = {
    "holidays": parse_holiday,
    "holiday_rules": parse_rule,
    "daily_windows": parse_window,
    "weekdays": parse_weekday,
    "composition": parse_step,
}


def parse_list(field: str, values: Any) -> list[Any]:
    """Each item of a stored list, parsed by the field's parser."""
    if not isinstance(values, list):
        raise CalendarError("not a list")
    return [PARSERS[field](value) for value in values]


def field_errors(values: dict[str, Any]) -> dict[str, str]:
    """Every field that does not parse, with a message naming the accepted form."""
    errors: dict[str, str] = {}
    checks: list[tuple[str, Callable[[], object]]] = [
        ("timezone", lambda: parse_timezone(values.get("timezone"))),
        *((field, _list_check(field, values.get(field, []))) for field in PARSERS),
    ]
    for field, check in checks:
        try:
            check()
        except CalendarError as exc:
            errors[field] = f"{exc}; enter {FORMS[field]}."
    return errors


def _list_check(field: str, values: Any) -> Callable[[], object]:
    return lambda: parse_list(field, values)


def normalised(field: str, values: list[Any]) -> list[Any]:
    """The stored form of a valid list: dates ISO, rules and day names upper case."""
    if field == "holiday_rules":
        return [parse_rule(value) for value in values]
    if field == "weekdays":
        return [WEEKDAYS[parse_weekday(value)] for value in values]
    if field == "daily_windows":
        return [f"{s:%H:%M}-{e:%H:%M}" for s, e in map(parse_window, values)]
    return list(values)


def own_components(
    zone: ZoneInfo,
    holidays: Sequence[str],
    holiday_rules: Sequence[str],
    daily_windows: Sequence[str],
    weekdays: Sequence[str],
) -> tuple[Component, ...]:
    """A calendar's own components, from its (valid) stored lists."""
    dates = frozenset(map(parse_holiday, holidays))
    rules = tuple(map(parse_rule, holiday_rules))  # a rule stored before a check is checked
    days = frozenset(map(parse_weekday, weekdays))
    components: list[Component] = [Window(zone, *parse_window(w)) for w in daily_windows]
    if dates or rules or days:
        components.append(Days(zone, _day_picker(dates, rules, days)))
    return tuple(components)


def _day_picker(
    dates: frozenset[date], rules: tuple[str, ...], weekdays: frozenset[int]
) -> Callable[[date], bool]:
    # The rules' dates, all rules together, once a year per calendar: a calendar of a thousand
    # rules would otherwise expand them for every day it is asked about.
    ruled: dict[int, frozenset[date]] = {}

    def picks(day: date) -> bool:
        if day in dates or day.weekday() in weekdays:
            return True
        if day.year not in ruled:
            ruled[day.year] = frozenset().union(*(rule_dates(rule, day.year) for rule in rules))
        return day in ruled[day.year]

    return picks
