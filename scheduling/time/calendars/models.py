"""The stored calendar. Its lists hold text (dates, RRULEs, HH:MM-HH:MM windows, day names,
composition steps) so the API, the admin and a fixture write the same JSON; parsing.py checks
them and rules.py evaluates them.

Stored calendars as rules: a calendar with every calendar it composes, loaded in one query
(a site keeps tens of calendars, not thousands), refusing unknown names and cycles.

A calendar named where rows are created (a scheduled model's `quiet_hours = "nights"`) or listed
(the admin's list) is kept NAMED_TTL seconds per process, every stored one built from one read,
so creating 10,000 rows or listing a hundred calendars reads the calendars once; a calendar
saved or deleted in this process is forgotten at once, in another within NAMED_TTL."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import models, transaction

from scheduling.time.calendars.parsing import (
    FORMS,
    PARSERS,
    field_errors,
    normalised,
    own_components,
    parse_step,
    parse_timezone,
)
from scheduling.time.calendars.references import Viewer, calendar_users
from scheduling.time.calendars.rules import CalendarError, CalendarRules, union

LIST_FIELDS = tuple(PARSERS)
EDITABLE_FIELDS = ("name", "description", "timezone", *LIST_FIELDS)


class Calendar(models.Model):
    name = models.SlugField(max_length=100, unique=True)
    description = models.CharField(max_length=200, blank=True, default="")
    timezone = models.CharField(max_length=64, default="UTC", help_text=FORMS["timezone"])
    holidays = models.JSONField(default=list, blank=True, help_text=FORMS["holidays"])
    holiday_rules = models.JSONField(default=list, blank=True, help_text=FORMS["holiday_rules"])
    daily_windows = models.JSONField(default=list, blank=True, help_text=FORMS["daily_windows"])
    weekdays = models.JSONField(default=list, blank=True, help_text=FORMS["weekdays"])
    composition = models.JSONField(
        default=list,
        blank=True,
        help_text="In order, after this calendar's own days and windows: include adds what "
        "another calendar excludes, exclude takes it away again. " + FORMS["composition"],
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    _rules: CalendarRules | None = None
    # Who asks for a save or a delete (the API's or the admin's user): a refusal names what
    # uses the calendar only where they may view it. None (code): everything is named.
    viewer: Viewer | None = None

    class Meta:
        # Explicit, as EventHistory's: the core app's models live in its packages.
        app_label = "scheduling"
        db_table = "scheduling_calendar"
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.clean()
        with transaction.atomic():
            self._refuse_rename_in_use()
            super().save(*args, **kwargs)
        self._rules = None
        forget_named()
        transaction.on_commit(forget_named)  # a reader may have kept the old one meanwhile

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        users = calendar_users.of(self.name, self.viewer)
        if users:
            raise ValidationError({"name": f"{self.name} is in use by {', '.join(users)}."})
        deleted = super().delete(*args, **kwargs)
        forget_named()
        return deleted

    def clean(self) -> None:
        errors = calendar_errors(self)
        if errors:
            raise ValidationError(errors)
        for field in LIST_FIELDS:
            setattr(self, field, normalised(field, getattr(self, field)))

    def _refuse_rename_in_use(self) -> None:
        if self.pk is None:
            return
        stored = Calendar.objects.filter(pk=self.pk).values_list("name", flat=True).first()
        if stored is None or stored == self.name:
            return
        users = calendar_users.of(stored, self.viewer)
        if users:
            raise ValidationError(
                {"name": f"{stored} cannot be renamed while in use by {', '.join(users)}."}
            )

    def rules(self) -> CalendarRules:
        """The calendar as pure rules, with the stored calendars it composes."""
        if self._rules is None:
            self._rules = calendar_rules(self)
        return self._rules

    def excluded_span(self, at: datetime) -> tuple[datetime, datetime] | None:
        """The excluded span holding the aware `at`, as UTC [start, end); None if allowed."""
        return self.rules().excluded_span(at)

    def next_allowed(self, at: datetime) -> datetime:
        """`at` itself if allowed, else the end of the excluded span holding it."""
        return self.rules().next_allowed(at)


def calendar_errors(calendar: Calendar) -> dict[str, str]:
    """Every problem by field, each naming the accepted form; empty when it can be saved."""
    errors = {}
    try:
        validate_slug(calendar.name)
    except ValidationError as exc:
        errors["name"] = "; ".join(exc.messages)
    errors.update(field_errors({name: getattr(calendar, name) for name in FORMS}))
    if not errors:
        try:
            calendar_rules(calendar)
        except CalendarError as exc:
            errors["composition"] = f"{exc}; enter {FORMS['composition']}."
    return errors


def _composing_calendars(name: str) -> list[str]:
    return [f"calendar {other}" for other in composed_by(name)]


calendar_users.add(_composing_calendars, permission="scheduling.view_calendar", noun="calendar")


# Stored calendars as rules, kept per process (below).
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
    if not names:
        return []  # most schedules name none: no query built for them
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
