"""Cron grammar and next-fire computation, time zone and DST aware.

`next_fire(expression, after, tz)` is pure: the first fire time strictly after `after`, as an
aware UTC datetime, or None when the expression never fires again.

Grammar:
- standard cron, 5 fields: minute hour day-of-month month day-of-week (0-7, 0 and 7 = SUN);
- Quartz, 6 fields (second first) or 7 (plus year, 1970-2099); Quartz numbers days of the
  week 1 (SUN) to 7 (SAT), as Quartz does; names (MON, JAN) mean the same in both forms;
- `?` in day-of-month or day-of-week; `L`, `LW`, `L-n` and `nW` in day-of-month; `nL`
  (last n-day of the month) and `n#k` (k-th n-day) in day-of-week; ranges, steps and lists;
- macros `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily` (`@midnight`), `@hourly`;
- `@every <duration>` (`90m`, `1h30m`, `24h`, `45s`, `2d`): elapsed time, so DST does not
  apply; fires at anchor + k * duration, the anchor being the schedule's start;
- `@at <ISO 8601>`: fires once; without an offset it is a wall time in the schedule's zone.

The matching itself is cronsim's (typed, dependency-free, maintained with healthchecks.io),
run over naive wall-clock times; this module adds what cronsim lacks (`?`, `nW`, `L-n`, the
year field, Quartz day numbers, macros, `@every`, `@at`, messages that name the field) and
the DST policy:
- a wall time that does not exist (spring gap) fires at the first instant after the jump;
- a wall time that occurs twice (autumn overlap) fires once, at its first occurrence.
"""

from __future__ import annotations

import calendar
import re
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

from cronsim import CronSim, CronSimError


class CronError(ValueError):
    """An expression or time zone that cannot be used; the message names the field and why."""


MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
DAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
QUARTZ_FIELDS = ("second", "minute", "hour", "day-of-month", "month", "day-of-week", "year")
ACCEPTED = {
    "second": "0-59",
    "minute": "0-59",
    "hour": "0-23",
    "day-of-month": "1-31, L, LW, L-n or nW",
    "month": "1-12 or JAN-DEC",
    "day-of-week": "0-7 or SUN-SAT (Quartz: 1-7, 1 = SUN), nL or n#k (k 1-5)",
    "year": "1970-2099",
}
YEARS = range(1970, 2100)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
SECOND = timedelta(seconds=1)
MAX_EVERY = timedelta(days=3660)
# Year and day filters restart the cron search; each restart moves at least a month ahead.
MAX_RESTARTS = 130 * 12 * 2


@dataclass(frozen=True)
class Plan:
    """A parsed expression: what cronsim evaluates, plus the filters cronsim lacks."""

    cron: str = ""
    years: frozenset[int] | None = None
    day_rule: tuple[str, int] | None = None  # ("W", n): nearest weekday; ("L-", n): last - n
    every: timedelta | None = None
    at: datetime | None = None


def next_fire(
    expression: str, after: datetime, tz: str, *, anchor: datetime | None = None
) -> datetime | None:
    """The first fire time strictly after `after` (aware UTC), or None if there is none."""
    plan = parse(expression)
    zone = time_zone(tz)
    if plan.every is not None:
        return _next_every(plan.every, after, anchor or EPOCH)
    if plan.at is not None:
        instant = plan.at if plan.at.tzinfo else to_utc(plan.at, zone)
        return instant.astimezone(UTC) if instant > after else None
    return _next_cron(plan, after, zone)


def fire_times(
    expression: str, after: datetime, tz: str, *, anchor: datetime | None = None
) -> Iterator[datetime]:
    """Every fire time after `after`, in order (possibly endless)."""
    current: datetime | None = after
    while current is not None:
        current = next_fire(expression, current, tz, anchor=anchor)
        if current is not None:
            yield current


def validate(expression: str, tz: str) -> None:
    """Raise CronError naming what is wrong; return quietly for a usable expression."""
    parse(expression)
    time_zone(tz)


@lru_cache(maxsize=512)
def time_zone(tz: str) -> zoneinfo.ZoneInfo:
    if not isinstance(tz, str) or tz not in _zone_names():
        raise CronError(
            f"timezone {tz!r} is not a known IANA time zone name, e.g. Europe/Paris or UTC"
        )
    return zoneinfo.ZoneInfo(tz)


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


# --- parsing --------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def parse(expression: str) -> Plan:
    if not isinstance(expression, str) or not expression.strip():
        raise CronError("cron is empty; expected e.g. '0 3 * * *', '@daily' or '@every 90m'")
    text = " ".join(expression.split())
    lowered = text.lower()
    if lowered.startswith("@every"):
        return Plan(every=_parse_duration(text[len("@every") :].strip()))
    if lowered.startswith("@at"):
        return Plan(at=_parse_instant(text[len("@at") :].strip()))
    if text.startswith("@"):
        if lowered not in MACROS:
            known = ", ".join([*MACROS, "@every <duration>", "@at <ISO 8601>"])
            raise CronError(f"cron macro {text!r} is not known; expected one of {known}")
        text = MACROS[lowered]
    return _parse_fields(text.upper().split())


def _parse_duration(text: str) -> timedelta:
    match = DURATION.match(text.lower())
    if not text or match is None:
        raise CronError(
            f"@every duration {text!r} is not valid; expected e.g. 90m, 1h30m, 24h, 45s or 2d"
        )
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if not 1 <= total <= MAX_EVERY.total_seconds():
        raise CronError(f"@every duration {text!r} must be from one second to {MAX_EVERY.days}d")
    return timedelta(seconds=total)


def _parse_instant(text: str) -> datetime:
    try:
        instant = datetime.fromisoformat(text)
    except ValueError:
        raise CronError(
            f"@at instant {text!r} is not valid; expected ISO 8601, e.g. 2026-12-24T09:00:00Z "
            "(without an offset it is read in the schedule's time zone)"
        ) from None
    if instant.year not in YEARS:
        raise CronError(f"@at instant {text!r} is not valid: years run {ACCEPTED['year']}")
    return instant


def _parse_fields(parts: list[str]) -> Plan:
    if len(parts) not in (5, 6, 7):
        raise CronError(
            f"cron has {len(parts)} fields; expected 5 (minute hour day-of-month month "
            "day-of-week), 6 (second first, Quartz) or 7 (Quartz, plus year)"
        )
    quartz = len(parts) > 5
    names = QUARTZ_FIELDS[:6] if quartz else QUARTZ_FIELDS[1:6]
    fields = dict(zip(names, parts, strict=False))
    _refuse_question_marks(fields)
    dom, day_rule = _day_of_month(fields["day-of-month"], fields["day-of-week"])
    dow = _day_of_week(fields["day-of-week"], quartz)
    if quartz and dom != "*" and dow != "*":
        raise CronError(
            "day-of-month and day-of-week are both set; a Quartz expression sets one of them "
            "and puts ? in the other"
        )
    converted = {**fields, "day-of-month": dom, "day-of-week": dow}
    cron = " ".join(converted[name] for name in names)
    _check_with_cronsim(cron, fields)  # errors quote the fields as written
    years = _parse_years(parts[6]) if len(parts) == 7 else None
    return Plan(cron=cron, years=years, day_rule=day_rule)


def _refuse_question_marks(fields: dict[str, str]) -> None:
    for name, value in fields.items():
        if "?" in value and (value != "?" or name not in ("day-of-month", "day-of-week")):
            raise CronError(
                f'{name} field "{value}" is not valid: ? stands alone, and only in '
                "day-of-month or day-of-week"
            )


def _day_of_month(value: str, dow: str) -> tuple[str, tuple[str, int] | None]:
    """cronsim's day-of-month, and a nearest-weekday or last-minus-n rule cronsim lacks."""
    rule: tuple[str, int] | None = None
    if (match := re.fullmatch(r"(\d{1,2})W", value)) is not None:
        rule = ("W", _bounded(int(match[1]), 1, 31, "day-of-month", value))
    elif (match := re.fullmatch(r"L-(\d{1,2})", value)) is not None:
        rule = ("L-", _bounded(int(match[1]), 0, 30, "day-of-month", value))
    elif "W" in value and value != "LW":
        raise CronError(
            f'day-of-month field "{value}" is not valid: W follows a single day, e.g. 15W, or L'
        )
    if rule is None:
        return ("*" if value == "?" else value), None
    if dow not in ("*", "?"):
        raise CronError(
            f'day-of-month field "{value}" cannot be combined with a day-of-week; put ? there'
        )
    return "*", rule


def _bounded(number: int, low: int, high: int, field: str, value: str) -> int:
    if not low <= number <= high:
        raise CronError(f'{field} field "{value}" is not valid: {number} is not in {low}-{high}')
    return number


def _day_of_week(value: str, quartz: bool) -> str:
    if value in ("*", "?"):
        return "*"
    return ",".join(_day_term(term, value, quartz) for term in value.split(","))


def _day_term(term: str, value: str, quartz: bool) -> str:
    base, slash, step = term.partition("/")
    if base == "L":  # Quartz: the last day of the week, Saturday
        return "6"
    if "#" in base:
        day, _, nth = base.partition("#")
        converted = f"{_day_number(day, value, quartz)}#{nth}"
    elif base.endswith("L"):
        converted = f"{_day_number(base[:-1], value, quartz)}L"
    elif "-" in base:
        first, _, last = base.partition("-")
        converted = f"{_day_number(first, value, quartz)}-{_day_number(last, value, quartz)}"
    else:
        converted = base if base == "*" else _day_number(base, value, quartz)
    return f"{converted}{slash}{step}"


def _day_number(day: str, value: str, quartz: bool) -> str:
    """Standard cron's number (0 = SUN) for a name, or for a standard or Quartz number."""
    if day in DAY_NAMES:
        return str(DAY_NAMES.index(day))
    if not day.isdigit():
        raise CronError(
            f'day-of-week field "{value}" is not valid: {day!r} is not a day; '
            f"expected {ACCEPTED['day-of-week']}"
        )
    number = int(day)
    if quartz:
        if not 1 <= number <= 7:
            raise CronError(
                f'day-of-week field "{value}" is not valid: Quartz numbers days 1 (SUN) to '
                "7 (SAT); names such as MON-FRI work in every form"
            )
        return str(number - 1)
    return day  # cronsim checks 0-7


def _check_with_cronsim(cron: str, fields: dict[str, str]) -> None:
    try:
        CronSim(cron, datetime(2000, 1, 1))
    except CronSimError as exc:
        name = str(exc).removeprefix("Bad ").strip()
        shown = fields.get(name, cron)
        accepted = ACCEPTED.get(name, "a valid cron field")
        raise CronError(
            f'{name} field "{shown}" is not valid; expected {accepted}, "*", a range a-b, '
            "a step */n or a-b/n, or a comma-separated list of those"
        ) from None


def _parse_years(value: str) -> frozenset[int] | None:
    if value in ("*", "?"):
        return None
    years: set[int] = set()
    for term in value.split(","):
        years.update(_year_term(term, value))
    return frozenset(years)


def _year_term(term: str, value: str) -> range:
    match = re.fullmatch(r"(\*|\d{4})(?:-(\d{4}))?(?:/(\d+))?", term)
    if match is None:
        raise CronError(
            f'year field "{value}" is not valid; expected {ACCEPTED["year"]}, "*", a range '
            "a-b, a step a/n or a-b/n, or a comma-separated list of those"
        )
    first = YEARS.start if match[1] == "*" else int(match[1])
    last = int(match[2]) if match[2] else (YEARS.stop - 1 if match[3] or match[1] == "*" else first)
    step = int(match[3]) if match[3] else 1
    if first not in YEARS or last not in YEARS or last < first or step < 1:
        raise CronError(f'year field "{value}" is not valid: years run {ACCEPTED["year"]}')
    return range(first, last + 1, step)


# --- evaluation -----------------------------------------------------------------------------


def _next_every(step: timedelta, after: datetime, anchor: datetime) -> datetime | None:
    if after < anchor:
        return anchor.astimezone(UTC)
    try:
        return (anchor + ((after - anchor) // step + 1) * step).astimezone(UTC)
    except OverflowError:  # past what a datetime holds
        return None


def _next_cron(plan: Plan, after: datetime, zone: zoneinfo.ZoneInfo) -> datetime | None:
    wall = after.astimezone(zone).replace(tzinfo=None)
    while True:
        candidate = _next_wall(plan, wall)
        if candidate is None:
            return None
        instant = to_utc(candidate, zone)
        # After a fold-1 `after` (second pass of an overlap), wall times of the first pass
        # map to instants already past: keep looking.
        if instant > after:
            return instant
        wall = candidate


def _next_wall(plan: Plan, wall: datetime) -> datetime | None:
    """The first matching naive wall time after `wall`, honouring the year and day rules."""
    for _ in range(MAX_RESTARTS):
        try:
            candidate: datetime = next(CronSim(plan.cron, wall))
        except (StopIteration, OverflowError, ValueError):
            return None  # no match within 50 years, or none before datetime's year 9999
        restart = _restart_point(plan, candidate)
        if restart is None:
            return candidate
        if restart is _NEVER:
            return None
        wall = restart - SECOND
    return None


_NEVER = datetime.max


def _restart_point(plan: Plan, candidate: datetime) -> datetime | None:
    """None if the candidate matches; else the wall time to search from (or _NEVER)."""
    if plan.years is not None and candidate.year not in plan.years:
        later = [year for year in plan.years if year > candidate.year]
        return datetime(min(later), 1, 1) if later else _NEVER
    if plan.day_rule is None:
        return None
    target = _rule_day(plan.day_rule, candidate.year, candidate.month)
    if target == candidate.day:
        return None
    if target is not None and target > candidate.day:
        return datetime(candidate.year, candidate.month, target)
    return _first_of_next_month(candidate.date())


def _rule_day(rule: tuple[str, int], year: int, month: int) -> int | None:
    last = calendar.monthrange(year, month)[1]
    kind, number = rule
    if kind == "L-":
        return last - number if last - number >= 1 else None
    if number > last:
        return None  # 31W does not fire in 30-day months
    return _nearest_weekday(year, month, number, last)


def _nearest_weekday(year: int, month: int, day: int, last: int) -> int:
    """Quartz's nW: the weekday nearest to `day`, never leaving the month."""
    weekday = date(year, month, day).weekday()  # Monday = 0
    if weekday == 5:  # Saturday: Friday, unless that is in the previous month
        return day - 1 if day > 1 else day + 2
    if weekday == 6:  # Sunday: Monday, unless that is in the next month
        return day + 1 if day < last else day - 2
    return day


def _first_of_next_month(day: date) -> datetime:
    return datetime(day.year + day.month // 12, day.month % 12 + 1, 1)


# --- the DST policy -------------------------------------------------------------------------


def to_utc(wall: datetime, zone: zoneinfo.ZoneInfo) -> datetime:
    """The instant of a naive wall time: fold=0 (the first) in an overlap; in a gap, the
    first instant after the jump."""
    aware = wall.replace(tzinfo=zone, fold=0)
    instant = aware.astimezone(UTC)
    if instant.astimezone(zone).replace(tzinfo=None) == wall:
        return instant
    return _gap_end(wall, zone)


def _gap_end(wall: datetime, zone: zoneinfo.ZoneInfo) -> datetime:
    """Binary search, to the second, for the instant the clocks jumped over `wall`."""
    candidates = (wall.replace(tzinfo=zone, fold=fold).astimezone(UTC) for fold in (0, 1))
    before, after = sorted(candidates)
    offset_after = after.astimezone(zone).utcoffset()
    while after - before > SECOND:
        middle = before + ((after - before) // 2 // SECOND) * SECOND
        if middle.astimezone(zone).utcoffset() == offset_after:
            after = middle
        else:
            before = middle
    return after
