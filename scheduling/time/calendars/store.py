"""Stored calendars as rules: a calendar with every calendar it composes, loaded in one query
(a site keeps tens of calendars, not thousands), refusing unknown names and cycles.

A calendar named where rows are created (a scheduled model's `quiet_hours = "nights"`) or listed
(the admin's list) is kept NAMED_TTL seconds per process, every stored one built from one read,
so creating 10,000 rows or listing a hundred calendars reads the calendars once; a calendar
saved or deleted in this process is forgotten at once, in another within NAMED_TTL."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from scheduling.time.calendars.models import Calendar
from scheduling.time.calendars.parsing import own_components, parse_step, parse_timezone
from scheduling.time.calendars.rules import CalendarError, CalendarRules, union

NAMED_TTL = 10.0
# The most calendars one calendar's evaluation may walk, every inclusion counted (itself too).
MAX_EXPANDED = 100
_named: dict[str, tuple[float, CalendarRules]] = {}  # name: (monotonic expiry, its rules)


def calendar_rules(calendar: Calendar) -> CalendarRules:
    """`calendar` as it stands (saved or not), with the stored calendars it composes."""
    rows = {**_stored(), calendar.name: calendar}
    return _build(calendar.name, rows, ())


def rules_for(names: Sequence[str]) -> CalendarRules:
    """What any of the named calendars excludes ("exclude A, then B")."""
    rows = _stored()
    return union([_build(name, rows, ()) for name in names])


def named_calendar(name: str) -> CalendarRules:
    """The calendar called `name` as rules; CalendarError if no calendar has that name (or one
    it composes is gone)."""
    now = time.monotonic()
    kept = _named.get(name)
    if kept is None or now >= kept[0]:
        _keep_every_named(now)
        kept = _named.get(name)
    if kept is None:  # no such calendar, or one that cannot be built: the error says why
        return _build(name, _stored(), ())
    return kept[1]


def _keep_every_named(now: float) -> None:
    """Every stored calendar as rules, from one read and one builder: a list of calendars asks
    for each in turn, and each may compose the others."""
    rows = _stored()
    builder = _Builder(rows)
    for name in rows:
        try:
            _named[name] = (now + NAMED_TTL, builder.build(name, ()))
        except CalendarError:
            _named.pop(name, None)


def forget_named() -> None:
    """A calendar changed: every kept one may compose it."""
    _named.clear()


def unknown(names: Sequence[str]) -> list[str]:
    known = set(Calendar.objects.filter(name__in=names).values_list("name", flat=True))
    return [name for name in names if name not in known]


def dependents(name: str) -> set[str]:
    """`name` and every calendar that composes it, directly or not."""
    rows = _stored()
    found = {name}
    grew = True
    while grew:
        more = {
            row.name
            for row in rows.values()
            if row.name not in found
            and any(parse_step(step)[1] in found for step in row.composition)
        }
        found |= more
        grew = bool(more)
    return found


def composed_by(name: str) -> list[str]:
    """The calendars whose composition names `name`."""
    rows = _stored().values()
    return [row.name for row in rows if any(step["calendar"] == name for step in row.composition)]


def _stored() -> dict[str, Calendar]:
    return {row.name: row for row in Calendar.objects.all()}


def _build(name: str, rows: Mapping[str, Calendar], path: tuple[str, ...]) -> CalendarRules:
    return _Builder(rows).build(name, path)


class _Builder:
    """Builds each named calendar once however often a composition includes it, and refuses a
    composition whose expanded tree (every inclusion counted, as evaluating it walks them)
    passes MAX_EXPANDED: a diamond of calendars grows tenfold a level."""

    def __init__(self, rows: Mapping[str, Calendar]) -> None:
        self.rows = rows
        self.built: dict[str, tuple[CalendarRules, int]] = {}  # name: (its rules, expanded size)

    def build(self, name: str, path: tuple[str, ...]) -> CalendarRules:
        rules, size = self._sized(name, path)
        if size > MAX_EXPANDED:
            raise CalendarError(
                f"{name} composes more than {MAX_EXPANDED} calendars once every inclusion is "
                "counted; include each calendar once, or fewer"
            )
        return rules

    def _sized(self, name: str, path: tuple[str, ...]) -> tuple[CalendarRules, int]:
        if name in path:
            raise CalendarError(f"a cycle: {' -> '.join((*path, name))}")
        if name not in self.built:
            self.built[name] = self._own(name, path)
        return self.built[name]

    def _own(self, name: str, path: tuple[str, ...]) -> tuple[CalendarRules, int]:
        row = self.rows.get(name)
        if row is None:
            raise CalendarError(f"no calendar is named {name!r}")
        zone = parse_timezone(row.timezone)
        components = own_components(
            zone, row.holidays, row.holiday_rules, row.daily_windows, row.weekdays
        )
        steps, size = [], 1
        for operation, other in map(parse_step, row.composition):
            rules, other_size = self._sized(other, (*path, name))
            steps.append((operation, rules))
            size = min(size + other_size, MAX_EXPANDED + 1)  # past the bound, no need to count
        return CalendarRules(components, tuple(steps), zone), size
