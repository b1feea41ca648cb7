"""Cron grammar and next-fire computation, time zone and DST aware.

`next_fire(expression, after, tz)` is pure: the first fire time strictly after `after`, as an
aware UTC datetime, or None when the expression never fires again. docs/cron.md is the
reference: the grammar, the DST rules, the leniencies kept and every difference from the peers
whose test vectors tests/unit/cron_vectors/*.json hold (Quartz, croniter, cronsim, cron-utils).

The package by role: plan.py (a parsed expression), parsing.py (the grammar), search.py (the
wall-time search), dst.py (time zones and the DST policy), rate.py (how often a plan fires,
counted from its fields); its public names are here.

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

DST (wall times are the schedule zone's), each rule a schedule's policy may override:
- a wall time the clocks skip (spring gap) fires at the first instant after the jump
  (`dst_gap="shift"`, the default) or not at all (`"skip"`);
- in a repeated hour (autumn overlap) an interval-style expression, one whose minute or hour
  field starts with `*` (Vixie cron's test: `*/15 * * * *`, `0 * * * *`, `0 */2 * * *`),
  fires on both passes, by elapsed time; any other expression fires once, on the first pass
  (`dst_repeat="auto"`, the default; `"once"` and `"twice"` choose for every expression).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from scheduling.recurring.cron.dst import Transition, next_cron, next_transitions, time_zone, to_utc
from scheduling.recurring.cron.parsing import parse
from scheduling.recurring.cron.plan import CronError, Plan
from scheduling.recurring.cron.rate import fires_per_hour, longest_span_within, most_fires_within
from scheduling.recurring.cron.search import next_every

__all__ = [
    "CronError",
    "Plan",
    "Transition",
    "fire_times",
    "fires_per_hour",
    "longest_span_within",
    "most_fires_within",
    "next_fire",
    "next_transitions",
    "parse",
    "time_zone",
    "to_utc",
    "validate",
]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def next_fire(
    expression: str,
    after: datetime,
    tz: str,
    *,
    anchor: datetime | None = None,
    dst_gap: str = "shift",
    dst_repeat: str = "auto",
) -> datetime | None:
    """The first fire time strictly after `after` (aware UTC), or None if there is none.

    `dst_gap` ("shift" or "skip") and `dst_repeat` ("auto", "once" or "twice") are the DST
    policy of a cron expression; @every and @at count elapsed time and ignore them."""
    plan = parse(expression)
    zone = time_zone(tz)
    if plan.every is not None:
        return next_every(plan.every, after, anchor or EPOCH)
    if plan.at is not None:
        instant = plan.at if plan.at.tzinfo else to_utc(plan.at, zone)
        return instant.astimezone(UTC) if instant > after else None
    twice = None if dst_repeat == "auto" else dst_repeat == "twice"
    return next_cron(plan, after, zone, skip_gap=dst_gap == "skip", twice=twice)


def fire_times(
    expression: str,
    after: datetime,
    tz: str,
    *,
    anchor: datetime | None = None,
    dst_gap: str = "shift",
    dst_repeat: str = "auto",
) -> Iterator[datetime]:
    """Every fire time after `after`, in order (possibly endless)."""
    current: datetime | None = after
    policy = {"dst_gap": dst_gap, "dst_repeat": dst_repeat}
    while current is not None:
        current = next_fire(expression, current, tz, anchor=anchor, **policy)
        if current is not None:
            yield current


def validate(expression: str, tz: str) -> None:
    """Raise CronError naming what is wrong; return quietly for a usable expression."""
    parse(expression)
    time_zone(tz)
