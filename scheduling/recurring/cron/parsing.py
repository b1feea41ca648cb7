"""The cron grammar: an expression's text to a Plan, or a CronError naming the field and the
accepted form (see the package docstring and docs/cron.md)."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from scheduling.recurring.cron.plan import CronError, Days, Plan

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
DURATION = re.compile(r"(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?")
TERM = re.compile(r"(\*|[0-9A-Z]+)(?:-([0-9A-Z]+))?(?:/([0-9]+))?")
MAX_EVERY = timedelta(days=3660)


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
