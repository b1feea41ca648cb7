"""Cron grammar and next-fire computation, time zone and DST aware.

`next_fire(expression, after, tz)` is pure: the first fire time strictly after `after`, as an
aware UTC datetime, or None when the expression never fires again. docs/cron.md is the
reference: the grammar, the DST rules, the leniencies kept and every difference from the peers
whose test vectors tests/recurring/test_cron_peers_*.py replay (Quartz, croniter, cronsim,
cron-utils).

Grammar, in short:
- standard cron, 5 fields: minute hour day-of-month month day-of-week (0-7, 0 and 7 = SUN);
  day-of-month and day-of-week are ORed when both are restricted and neither starts with `*`
  (Vixie cron's rule);
- Quartz, 6 fields (second first) or 7 (plus year, 1970-2099); days of the week 1 (SUN) to 7
  (SAT); one of day-of-month and day-of-week is `?` (or `*`, a leniency);
- in every field: `*`, values, names (MON, JAN), ranges `a-b` (wrapping when b < a: `SAT-SUN`,
  `22-2`, `NOV-FEB`), steps `*/n`, `a/n`, `a-b/n`, and comma lists of those;
- day-of-month also: `L`, `L-n`, `LW`, `L-nW`, `nW`, in lists too (`L-1W,L-1`, `2W,16`);
  day-of-week also: `L` alone (Saturday), `nL` (last n-day), `n#k` (k-th n-day);
- macros `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily` (`@midnight`), `@hourly`;
- `@every <duration>` (`90m`, `1h30m`, `24h`, `45s`, `2d`): elapsed time from the anchor;
- `@at <ISO 8601>` or `@at <epoch seconds>`: fires once.

DST (wall times are the schedule zone's):
- a wall time the clocks skip (spring gap) fires at the first instant after the jump;
- in a repeated hour (autumn overlap) an interval-style expression, one whose minute or hour
  field starts with `*` (Vixie cron's test: `*/15 * * * *`, `0 * * * *`, `0 */2 * * *`),
  fires on both passes, by elapsed time; any other expression fires once, on the first pass.
"""

from __future__ import annotations

import calendar
import re
import zoneinfo
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache


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
MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
QUARTZ_FIELDS = ("second", "minute", "hour", "day-of-month", "month", "day-of-week", "year")
ACCEPTED = {
    "second": "0-59",
    "minute": "0-59",
    "hour": "0-23",
    "day-of-month": "1-31, L, L-n, LW, L-nW or nW",
    "month": "1-12 or JAN-DEC",
    "day-of-week": "0-7 or SUN-SAT (0 and 7 = SUN), L, nL or n#k (k 1-5)",
    "quartz day-of-week": "1-7 (1 = SUN, as Quartz numbers them) or SUN-SAT, L, nL or n#k (k 1-5)",
    "year": "1970-2099",
}
FORMS = '"*", a range a-b (b < a wraps around), a step */n, a/n or a-b/n, or a comma list'
YEARS = range(1970, 2100)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
DURATION = re.compile(r"(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?")
TERM = re.compile(r"(\*|[0-9A-Z]+)(?:-([0-9A-Z]+))?(?:/([0-9]+))?")
SECOND = timedelta(seconds=1)
MAX_EVERY = timedelta(days=3660)
# The Gregorian calendar repeats every 400 years: a day rule unmet for that long never is.
SEARCH_YEARS = 400


@dataclass(frozen=True)
class Field:
    """A numeric field's bounds; `wrap` is how many values a wrapping range cycles through."""

    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    first_name: int = 0  # the number of names[0]
    accepted_key: str = ""

    @property
    def accepted(self) -> str:
        return ACCEPTED[self.accepted_key or self.name]

    @property
    def wrap(self) -> int:
        return self.high - self.low + 1


SECONDS = Field("second", 0, 59)
MINUTES = Field("minute", 0, 59)
HOURS = Field("hour", 0, 23)
DAYS = Field("day-of-month", 1, 31)
MONTHS = Field("month", 1, 12, MONTH_NAMES, 1)
WEEKDAYS = Field("day-of-week", 0, 7, DAY_NAMES, 0)  # 0 and 7 = SUN; ranges wrap over 0-6
QUARTZ_WEEKDAYS = Field("day-of-week", 1, 7, DAY_NAMES, 1, "quartz day-of-week")
YEAR = Field("year", YEARS.start, YEARS.stop - 1)


@dataclass(frozen=True)
class Days:
    """A day-of-month or day-of-week field: plain values plus L / W / # rules.

    Day-of-week values are 0 (SUN) to 6. Rules: ("L", n) last day - n, ("LW", n) the weekday
    nearest to it, ("W", d) the weekday nearest to day d; ("L", w) the last w-day of the month,
    ("#", w, k) its k-th w-day."""

    values: frozenset[int]
    rules: tuple[tuple[str, int, int], ...] = ()


@dataclass(frozen=True)
class Plan:
    """A parsed expression: sorted values per field, the day fields, or a macro's instant."""

    seconds: tuple[int, ...] = (0,)
    minutes: tuple[int, ...] = ()
    hours: tuple[int, ...] = ()
    months: tuple[int, ...] = ()
    years: tuple[int, ...] | None = None
    dom: Days | None = None  # None: every day
    dow: Days | None = None
    days_or: bool = False  # Vixie: both restricted and neither starts with "*"
    interval: bool = False  # minute or hour field starts with "*": the DST overlap rule
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
    _refuse_non_ascii(expression)
    text = " ".join(expression.split())
    lowered = text.lower()
    if lowered.startswith("@every"):
        return Plan(every=_parse_duration(text[len("@every") :].strip()))
    if lowered.startswith("@at"):
        return Plan(at=_parse_instant(text[len("@at") :].strip()))
    if text.startswith("@"):
        if lowered not in MACROS:
            known = ", ".join([*MACROS, "@every <duration>", "@at <ISO 8601 or epoch seconds>"])
            raise CronError(f"cron macro {text!r} is not known; expected one of {known}")
        text = MACROS[lowered]
    return _parse_fields(text.upper().split())


def _refuse_non_ascii(expression: str) -> None:
    """Non-ASCII digits (¹, ٣) would pass str.isdigit() and \\d: refuse them by name."""
    if expression.isascii():
        return
    parts = expression.split()
    index, part = next((i, p) for i, p in enumerate(parts) if not p.isascii())
    char = next(c for c in part if not c.isascii())
    if parts[0].startswith("@"):
        name = f"{parts[0]} value"
    elif len(parts) in (5, 6, 7):
        name = f"{(QUARTZ_FIELDS[1:6] if len(parts) == 5 else QUARTZ_FIELDS)[index]} field"
    else:
        name = f"cron field {index + 1}"
    raise CronError(
        f'{name} "{part}" is not valid: {char!r} (U+{ord(char):04X}) is not ASCII; '
        "write digits as 0-9 and names as MON or JAN"
    )


def _parse_duration(text: str) -> timedelta:
    match = DURATION.fullmatch(text.lower())
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
        if re.fullmatch(r"[0-9]{1,12}", text):  # epoch seconds, the distributed-cron form
            instant = datetime.fromtimestamp(int(text), UTC)
        else:
            instant = datetime.fromisoformat(text)
    except (ValueError, OverflowError):
        raise CronError(
            f"@at instant {text!r} is not valid; expected ISO 8601, e.g. 2026-12-24T09:00:00Z "
            "(without an offset it is read in the schedule's time zone), or epoch seconds, "
            "e.g. 1798102800"
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
    names = QUARTZ_FIELDS if quartz else QUARTZ_FIELDS[1:6]
    fields = dict(zip(names, parts, strict=False))
    _refuse_question_marks(fields)
    dom_text, dow_text = fields["day-of-month"], fields["day-of-week"]
    dom = None if dom_text in ("*", "?") else _day_of_month(dom_text)
    dow = None if dow_text in ("*", "?") else _day_of_week(dow_text, quartz)
    if quartz and dom is not None and dow is not None:
        raise CronError(
            f'day-of-month "{dom_text}" and day-of-week "{dow_text}" are both set; a Quartz '
            "expression sets one of them and puts ? in the other"
        )
    plan = Plan(
        seconds=_values(fields.get("second", "0"), SECONDS),
        minutes=_values(fields["minute"], MINUTES),
        hours=_values(fields["hour"], HOURS),
        months=_values(fields["month"], MONTHS),
        years=_years(fields["year"]) if "year" in fields else None,
        dom=dom,
        dow=dow,
        days_or=not dom_text.startswith(("*", "?")) and not dow_text.startswith(("*", "?")),
        interval=fields["minute"].startswith("*") or fields["hour"].startswith("*"),
    )
    _refuse_impossible_days(plan, fields)
    return plan


def _refuse_question_marks(fields: dict[str, str]) -> None:
    for name, value in fields.items():
        if "?" in value and (value != "?" or name not in ("day-of-month", "day-of-week")):
            raise CronError(
                f'{name} field "{value}" is not valid: ? stands alone, and only in '
                "day-of-month or day-of-week"
            )


def _invalid(field: Field, value: str, why: str = "") -> CronError:
    if why:
        return CronError(
            f'{field.name} field "{value}" is not valid; expected {field.accepted} ({why})'
        )
    return CronError(
        f'{field.name} field "{value}" is not valid; expected {field.accepted}, {FORMS} of those'
    )


def _values(value: str, field: Field) -> tuple[int, ...]:
    numbers: set[int] = set()
    for term in value.split(","):
        numbers.update(_term(term, value, field))
    return tuple(sorted(numbers))


def _term(term: str, value: str, field: Field) -> list[int]:
    """One list term: `*`, `a`, `a-b`, and any of them with `/step`; b < a wraps around."""
    match = TERM.fullmatch(term)
    if match is None:
        raise _invalid(field, value)
    first_text, last_text, step_text = match.groups()
    step = _step(step_text, value, field)
    if first_text == "*":
        if last_text is not None:
            raise _invalid(field, value)
        return list(range(field.low, field.high + 1, step))
    first = _number(first_text, value, field)
    if last_text is None:
        return list(range(first, field.high + 1, step)) if step_text else [first]
    last = _number(last_text, value, field)
    if last >= first:
        return list(range(first, last + 1, step))
    return _wrapped(first, last, step, value, field)


def _wrapped(first: int, last: int, step: int, value: str, field: Field) -> list[int]:
    """Quartz's wrap-around range: walk on past the field's end and start again at its low."""
    if field is YEAR:
        raise _invalid(field, value, "a year range runs upward")
    low, size = field.low, field.wrap
    if field is WEEKDAYS:  # 0 and 7 are both Sunday: cycle through 0-6
        size, first, last = 7, first % 7, last % 7
        if last >= first:
            return list(range(first, last + 1, step))
    return [low + (i - low) % size for i in range(first, last + size + 1, step)]


def _step(text: str | None, value: str, field: Field) -> int:
    if text is None:
        return 1
    step = int(text)
    if not 0 < step <= field.high:  # Quartz's limits
        raise _invalid(field, value, f"a step runs from 1 to {field.high}")
    return step


def _number(text: str, value: str, field: Field) -> int:
    if text in field.names:
        return field.names.index(text) + field.first_name
    if not text.isdigit():  # ASCII only: parse() refused anything else
        raise _invalid(field, value, f"{text!r} is not a number or a name")
    number = int(text)
    if not field.low <= number <= field.high:
        raise _invalid(field, value, f"{number} is not in {field.low}-{field.high}")
    return number


def _years(value: str) -> tuple[int, ...] | None:
    return None if value == "*" else _values(value, YEAR)


def _day_of_month(value: str) -> Days:
    numbers: set[int] = set()
    rules: list[tuple[str, int, int]] = []
    for term in value.split(","):
        if (match := re.fullmatch(r"L(?:-([0-9]{1,2}))?(W?)", term)) is not None:
            offset = _bounded(int(match[1] or 0), 0, 30, value, "L-n takes n from 0 to 30")
            rules.append(("LW" if match[2] else "L", offset, 0))
        elif (match := re.fullmatch(r"([0-9]{1,2})W", term)) is not None:
            day = _bounded(int(match[1]), 1, 31, value, "nW takes a day from 1 to 31")
            rules.append(("W", day, 0))
        elif "L" in term or "W" in term:
            raise _invalid(DAYS, value, "L and W stand alone or as L-n, LW, L-nW or nW")
        else:
            numbers.update(_term(term, value, DAYS))
    return Days(frozenset(numbers), tuple(rules))


def _bounded(number: int, low: int, high: int, value: str, why: str) -> int:
    if not low <= number <= high:
        raise _invalid(DAYS, value, f"{number}: {why}")
    return number


def _day_of_week(value: str, quartz: bool) -> Days:
    field = QUARTZ_WEEKDAYS if quartz else WEEKDAYS
    if value == "L":  # Quartz: L alone is the last day of the week
        return Days(frozenset({6}))
    numbers: set[int] = set()
    rules: list[tuple[str, int, int]] = []
    for term in value.split(","):
        if term == "L":
            raise _invalid(field, value, "L stands alone (Saturday) or follows a day, e.g. 5L")
        if (match := re.fullmatch(r"([0-9A-Z]+?)L", term)) is not None:
            rules.append(("L", _weekday(match[1], value, field), 0))
        elif (match := re.fullmatch(r"([0-9A-Z]+)#([0-9]+)", term)) is not None:
            nth = int(match[2])
            if not 1 <= nth <= 5:
                raise _invalid(field, value, f"#{nth}: a month has a 1st to a 5th of each day")
            rules.append(("#", _weekday(match[1], value, field), nth))
        else:
            numbers.update(_standard_day(day, field) for day in _term(term, value, field))
    return Days(frozenset(numbers), tuple(rules))


def _weekday(text: str, value: str, field: Field) -> int:
    return _standard_day(_number(text, value, field), field)


def _standard_day(number: int, field: Field) -> int:
    """0 (SUN) to 6 from a standard (0-7) or a Quartz (1-7) number."""
    return (number - 1) % 7 if field is QUARTZ_WEEKDAYS else number % 7


def _refuse_impossible_days(plan: Plan, fields: dict[str, str]) -> None:
    """`0 0 30 2 *` never fires: say so now rather than let a schedule wait for ever."""
    if plan.dom is None or plan.dom.rules or (plan.dow is not None and plan.days_or):
        return
    longest = max(calendar.monthrange(2000, month)[1] for month in plan.months)
    if plan.dom.values and min(plan.dom.values) > longest:
        raise CronError(
            f'day-of-month field "{fields["day-of-month"]}" is not valid: month field '
            f'"{fields["month"]}" has no month with that day'
        )


# --- evaluation -----------------------------------------------------------------------------


def _next_every(step: timedelta, after: datetime, anchor: datetime) -> datetime | None:
    if after < anchor:
        return anchor.astimezone(UTC)
    try:
        return (anchor + ((after - anchor) // step + 1) * step).astimezone(UTC)
    except OverflowError:  # past what a datetime holds
        return None


def _next_wall(plan: Plan, wall: datetime) -> datetime | None:
    """The first matching naive wall time strictly after `wall`, to the second."""
    try:
        return _search(plan, wall.replace(microsecond=0) + SECOND, wall.year + SEARCH_YEARS)
    except (OverflowError, ValueError):  # past datetime's year 9999
        return None


def _search(plan: Plan, t: datetime, until: int) -> datetime | None:
    """Field by field from the largest: a field that does not match moves `t` to its next
    matching value and resets the smaller fields."""
    while t.year <= until:
        if plan.years is not None and t.year not in plan.years:
            year = _following(plan.years, t.year)
            if year is None:
                return None
            t = datetime(year, 1, 1)
        elif t.month not in plan.months:
            month = _following(plan.months, t.month)
            t = datetime(t.year, month, 1) if month is not None else datetime(t.year + 1, 1, 1)
        elif t.day not in (days := _days(plan.dom, plan.dow, plan.days_or, t.year, t.month)):
            day = _following(days, t.day)
            t = datetime(t.year, t.month, day) if day is not None else _first_month_day(t)
        elif t.hour not in plan.hours:
            hour = _following(plan.hours, t.hour)
            t = t.replace(hour=hour, minute=0, second=0) if hour is not None else _next_day(t)
        elif t.minute not in plan.minutes:
            minute = _following(plan.minutes, t.minute)
            t = (
                t.replace(minute=minute, second=0)
                if minute is not None
                else t.replace(minute=0, second=0) + timedelta(hours=1)
            )
        elif t.second not in plan.seconds:
            second = _following(plan.seconds, t.second)
            t = (
                t.replace(second=second)
                if second is not None
                else t.replace(second=0) + timedelta(minutes=1)
            )
        else:
            return t
    return None


def _following(values: tuple[int, ...], current: int) -> int | None:
    """The first value above `current`, or None."""
    index = bisect_left(values, current + 1)
    return values[index] if index < len(values) else None


def _next_day(t: datetime) -> datetime:
    return datetime(t.year, t.month, t.day) + timedelta(days=1)


def _first_month_day(t: datetime) -> datetime:
    """The first day of the month after t's."""
    return datetime(t.year + t.month // 12, t.month % 12 + 1, 1)


@lru_cache(maxsize=4096)
def _days(
    dom: Days | None, dow: Days | None, days_or: bool, year: int, month: int
) -> tuple[int, ...]:
    """The days of one month that match the day-of-month and day-of-week fields."""
    last = calendar.monthrange(year, month)[1]
    all_days = frozenset(range(1, last + 1))
    by_dom = all_days if dom is None else _month_days(dom, year, month, last)
    by_dow = all_days if dow is None else _week_days(dow, year, month, last)
    days = by_dom | by_dow if days_or else by_dom & by_dow
    return tuple(sorted(days))


def _month_days(dom: Days, year: int, month: int, last: int) -> frozenset[int]:
    days = {day for day in dom.values if day <= last}
    for kind, number, _ in dom.rules:
        if kind == "W" and number <= last:  # 31W does not fire in 30-day months (Quartz)
            days.add(_nearest_weekday(year, month, number, last))
        elif kind in ("L", "LW") and last - number >= 1:
            target = last - number
            days.add(_nearest_weekday(year, month, target, last) if kind == "LW" else target)
    return frozenset(days)


def _week_days(dow: Days, year: int, month: int, last: int) -> frozenset[int]:
    first_weekday = (date(year, month, 1).weekday() + 1) % 7  # 0 = SUN
    days = set()
    for day in range(1, last + 1):
        weekday = (first_weekday + day - 1) % 7
        if weekday in dow.values or any(
            rule_day == weekday
            and ((kind == "L" and day + 7 > last) or (kind == "#" and (day + 6) // 7 == nth))
            for kind, rule_day, nth in dow.rules
        ):
            days.add(day)
    return frozenset(days)


def _nearest_weekday(year: int, month: int, day: int, last: int) -> int:
    """Quartz's nW: the weekday nearest to `day`, never leaving the month."""
    weekday = date(year, month, day).weekday()  # Monday = 0
    if weekday == 5:  # Saturday: Friday, unless that is in the previous month
        return day - 1 if day > 1 else day + 2
    if weekday == 6:  # Sunday: Monday, unless that is in the next month
        return day + 1 if day < last else day - 2
    return day


# --- the DST policy -------------------------------------------------------------------------


def _next_cron(plan: Plan, after: datetime, zone: zoneinfo.ZoneInfo) -> datetime | None:
    """Wall times walk forward; an interval-style plan asked from the first pass of a repeated
    hour also has the second pass ahead of it, which wall times alone do not show."""
    second_pass = _second_pass_fire(plan, after, zone) if plan.interval else None
    wall = after.astimezone(zone).replace(tzinfo=None)
    while (candidate := _next_wall(plan, wall)) is not None:
        instant = _instant(candidate, zone, after, plan.interval)
        if instant is not None:
            return instant if second_pass is None else min(instant, second_pass)
        wall = candidate
    return second_pass


def _instant(
    wall: datetime, zone: zoneinfo.ZoneInfo, after: datetime, interval: bool
) -> datetime | None:
    """The instant a matching wall time fires at, if after `after`: its first occurrence; in
    an overlap asked from the second pass, an interval-style plan's second occurrence."""
    first = to_utc(wall, zone)
    if first > after:
        return first
    second = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    return second if interval and second > after else None


def _second_pass_fire(plan: Plan, after: datetime, zone: zoneinfo.ZoneInfo) -> datetime | None:
    """If `after` is in the first pass of a repeated hour: the plan's first match in the
    second pass, as an instant."""
    length = _overlap_length(after, zone)
    if not length:
        return None
    start = _transition(after, after + length, zone)  # when the clocks go back
    start_wall = start.astimezone(zone).replace(tzinfo=None)
    candidate = _next_wall(plan, start_wall - SECOND)
    if candidate is None or candidate >= start_wall + length:
        return None
    return candidate.replace(tzinfo=zone, fold=1).astimezone(UTC)


def _overlap_length(after: datetime, zone: zoneinfo.ZoneInfo) -> timedelta:
    """How far the clocks go back, if `after` is in the first pass of a repeated hour."""
    local = after.astimezone(zone)
    if local.fold:
        return timedelta(0)
    wall = local.replace(tzinfo=None)
    first, second = (wall.replace(tzinfo=zone, fold=fold).astimezone(UTC) for fold in (0, 1))
    return second - first


def _transition(before: datetime, after: datetime, zone: zoneinfo.ZoneInfo) -> datetime:
    """Binary search, to the second, for the first instant with `after`'s UTC offset."""
    offset_after = after.astimezone(zone).utcoffset()
    while after - before > SECOND:
        middle = before + ((after - before) // 2 // SECOND) * SECOND
        if middle.astimezone(zone).utcoffset() == offset_after:
            after = middle
        else:
            before = middle
    return after


def to_utc(wall: datetime, zone: zoneinfo.ZoneInfo) -> datetime:
    """The instant of a naive wall time: fold=0 (the first) in an overlap; in a gap, the
    first instant after the jump."""
    aware = wall.replace(tzinfo=zone, fold=0)
    instant = aware.astimezone(UTC)
    if instant.astimezone(zone).replace(tzinfo=None) == wall:
        return instant
    candidates = sorted(wall.replace(tzinfo=zone, fold=fold).astimezone(UTC) for fold in (0, 1))
    return _transition(candidates[0], candidates[1], zone)
