"""Calendars as pure rules over real time zones: holidays (dates and RRULEs), daily windows
crossing midnight and DST days, weekdays, composition in order, and the refusals."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from scheduling.recurring import cron
from scheduling.recurring.calendars import CalendarPolicy, planned_fires
from scheduling.time.calendars.parsing import field_errors, own_components, parse_rule
from scheduling.time.calendars.rules import EXCLUDE, INCLUDE, CalendarError, CalendarRules, union

PARIS = ZoneInfo("Europe/Paris")
NEW_YORK = ZoneInfo("America/New_York")


def calendar(zone=PARIS, *, holidays=(), rules=(), windows=(), weekdays=(), steps=()):
    parsed_rules = [parse_rule(rule) for rule in rules]
    components = own_components(zone, list(holidays), parsed_rules, list(windows), list(weekdays))
    return CalendarRules(components, tuple(steps))


def utc(*args):
    return datetime(*args, tzinfo=UTC)


def test_a_holiday_is_excluded_from_local_midnight_to_local_midnight():
    christmas = calendar(holidays=["2026-12-25"])

    assert christmas.excluded_span(utc(2026, 12, 25, 8)) == (
        utc(2026, 12, 24, 23),
        utc(2026, 12, 25, 23),
    )
    assert christmas.excluded_span(utc(2026, 12, 24, 22, 59)) is None
    assert christmas.next_allowed(utc(2026, 12, 24, 22, 59)) == utc(2026, 12, 24, 22, 59)
    assert christmas.next_allowed(utc(2026, 12, 25, 12)) == utc(2026, 12, 25, 23)


@pytest.mark.parametrize(
    ("rule", "year", "day"),
    [
        ("FREQ=YEARLY;BYMONTH=11;BYDAY=4TH", 2026, 26),  # Thanksgiving
        ("FREQ=YEARLY;BYMONTH=11;BYDAY=4TH", 2027, 25),
        ("FREQ=YEARLY;BYMONTH=11;BYMONTHDAY=11", 2030, 11),
    ],
)
def test_a_yearly_rule_picks_its_day_every_year(rule, year, day):
    thanksgiving = calendar(NEW_YORK, rules=[rule])
    noon = datetime(year, 11, day, 12, tzinfo=NEW_YORK)

    start, end = thanksgiving.excluded_span(noon)

    assert start == datetime(year, 11, day, tzinfo=NEW_YORK)
    assert end == datetime(year, 11, day + 1, tzinfo=NEW_YORK)
    assert thanksgiving.excluded_span(noon.replace(day=day - 7)) is None


def test_easter_monday_by_dateutils_byeaster():
    easter_monday = calendar(rules=["FREQ=YEARLY;BYEASTER=1"])

    assert easter_monday.excluded_span(datetime(2026, 4, 6, 12, tzinfo=PARIS)) is not None
    assert easter_monday.excluded_span(datetime(2027, 3, 29, 12, tzinfo=PARIS)) is not None
    assert easter_monday.excluded_span(datetime(2027, 4, 6, 12, tzinfo=PARIS)) is None


def test_a_holiday_next_to_a_weekend_makes_one_span():
    closed = calendar(holidays=["2026-12-25"], weekdays=["SAT", "SUN"])

    span = closed.excluded_span(datetime(2026, 12, 26, 10, tzinfo=PARIS))

    assert span == (utc(2026, 12, 24, 23), utc(2026, 12, 27, 23))  # Friday to Monday 00:00


def test_a_daily_window_crosses_midnight():
    night = calendar(windows=["22:00-07:00"])

    assert night.excluded_span(datetime(2026, 11, 24, 23, 30, tzinfo=PARIS)) == (
        utc(2026, 11, 24, 21),
        utc(2026, 11, 25, 6),
    )
    assert night.excluded_span(datetime(2026, 11, 25, 6, 59, tzinfo=PARIS)) == (
        utc(2026, 11, 24, 21),
        utc(2026, 11, 25, 6),
    )
    assert night.excluded_span(datetime(2026, 11, 25, 7, tzinfo=PARIS)) is None
    assert night.excluded_span(datetime(2026, 11, 25, 21, 59, tzinfo=PARIS)) is None


def test_a_night_window_on_dst_nights_holds_its_wall_times():
    night = calendar(NEW_YORK, windows=["22:00-07:00"])

    # Spring forward (2026-03-08): 22:00 EST to 07:00 EDT is eight hours.
    assert night.excluded_span(utc(2026, 3, 8, 6)) == (utc(2026, 3, 8, 3), utc(2026, 3, 8, 11))
    # Fall back (2026-11-01): 22:00 EDT to 07:00 EST is ten hours.
    assert night.excluded_span(utc(2026, 11, 1, 6)) == (utc(2026, 11, 1, 2), utc(2026, 11, 1, 12))


def test_a_window_edge_the_clocks_skip_is_the_jump_and_a_repeated_one_takes_both_passes():
    gap = calendar(NEW_YORK, windows=["02:30-04:00"])
    repeated = calendar(NEW_YORK, windows=["00:30-01:30"])

    # 02:30 does not exist on 2026-03-08: the window starts at the jump, 03:00 EDT.
    assert gap.excluded_span(utc(2026, 3, 8, 7, 30)) == (utc(2026, 3, 8, 7), utc(2026, 3, 8, 8))
    # 01:30 happens twice on 2026-11-01: the window ends at the second one (EST).
    assert repeated.excluded_span(utc(2026, 11, 1, 5)) == (
        utc(2026, 11, 1, 4, 30),
        utc(2026, 11, 1, 6, 30),
    )


def test_a_holiday_on_a_dst_day_lasts_that_days_hours():
    halloween_after = calendar(NEW_YORK, holidays=["2026-11-01"])

    start, end = halloween_after.excluded_span(utc(2026, 11, 1, 15))

    assert end - start == (utc(2026, 11, 2, 5) - utc(2026, 11, 1, 4))  # 25 hours
    assert (end - start).total_seconds() == 25 * 3600


def test_composition_applies_its_steps_in_order():
    weekends = calendar(weekdays=["SAT", "SUN"])
    open_saturday = calendar(holidays=["2026-11-28"])
    saturday = datetime(2026, 11, 28, 12, tzinfo=PARIS)
    sunday = datetime(2026, 11, 29, 12, tzinfo=PARIS)

    but_one = CalendarRules(steps=((INCLUDE, weekends), (EXCLUDE, open_saturday)))
    reversed_order = CalendarRules(steps=((EXCLUDE, open_saturday), (INCLUDE, weekends)))

    assert but_one.excluded_span(saturday) is None
    assert but_one.excluded_span(sunday) == (utc(2026, 11, 28, 23), utc(2026, 11, 29, 23))
    assert reversed_order.excluded_span(saturday) == (
        utc(2026, 11, 27, 23),
        utc(2026, 11, 29, 23),
    )


def test_next_allowed_chains_spans_of_several_calendars():
    night = calendar(windows=["22:00-07:00"])
    christmas = calendar(holidays=["2026-12-25"])

    either = union([night, christmas])

    # 23:00 on the 24th: the night, then Christmas Day, then the next night until 07:00.
    assert either.next_allowed(datetime(2026, 12, 24, 23, tzinfo=PARIS)) == datetime(
        2026, 12, 26, 7, tzinfo=PARIS
    )


def test_the_next_spans_are_listed_in_order():
    night = calendar(windows=["22:00-07:00"])

    spans = night.spans(datetime(2026, 11, 24, 12, tzinfo=PARIS), 2)

    assert spans == [
        (utc(2026, 11, 24, 21), utc(2026, 11, 25, 6)),
        (utc(2026, 11, 25, 21), utc(2026, 11, 26, 6)),
    ]


def test_a_calendar_that_excludes_every_day_has_no_end_to_find():
    always = calendar(weekdays=["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"])

    with pytest.raises(CalendarError, match="every instant"):
        always.next_allowed(utc(2026, 11, 24))


def test_a_skip_policy_drops_the_fires_in_a_span():
    night = calendar(NEW_YORK, windows=["22:00-07:00"])

    def hourly(after):
        return cron.next_fire("0 * * * *", after, "America/New_York")

    plan = planned_fires(hourly, night, CalendarPolicy.SKIP, utc(2026, 3, 8, 1, 30))
    first, second, third = next(plan), next(plan), next(plan)

    assert (first.status, first.at) == ("fires", utc(2026, 3, 8, 2))  # 21:00 EST
    assert (second.status, second.planned) == ("skipped", utc(2026, 3, 8, 3))  # 22:00 EST
    assert (third.status, third.at) == ("fires", utc(2026, 3, 8, 11))  # 07:00 EDT


def test_a_move_policy_fires_once_at_the_spans_end():
    night = calendar(windows=["22:00-07:00"])

    def hourly(after):
        return cron.next_fire("0 * * * *", after, "Europe/Paris")

    plan = planned_fires(hourly, night, CalendarPolicy.MOVE, utc(2026, 11, 24, 19, 30))
    first, second, third = next(plan), next(plan), next(plan)

    assert (first.status, first.at) == ("fires", utc(2026, 11, 24, 20))  # 21:00 in Paris
    assert second.status == "moved"
    assert (second.planned, second.at) == (utc(2026, 11, 24, 21), utc(2026, 11, 25, 6))
    assert (third.status, third.at) == ("fires", utc(2026, 11, 25, 7))  # 08:00: 07:00 folded


@pytest.mark.parametrize(
    ("field", "value", "form"),
    [
        ("timezone", "Mars/Olympus", "IANA time zone"),
        ("holidays", ["2026-02-30"], "YYYY-MM-DD"),
        ("holidays", "2026-12-25", "a list of dates"),
        ("holiday_rules", ["FREQ=DAILY;BYDAY=MO"], "FREQ must be YEARLY or MONTHLY"),
        ("holiday_rules", ["FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=25;COUNT=3"], "COUNT"),
        ("holiday_rules", ["FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30"], "never falls"),
        ("holiday_rules", ["FREQ=YEARLY"], "BYMONTHDAY"),
        ("holiday_rules", ["FREQ=YEARLY;BYDAY=XX"], "RRULE"),
        ("daily_windows", ["22:00-22:00"], "HH:MM-HH:MM"),
        ("daily_windows", ["25:00-07:00"], "HH:MM-HH:MM"),
        ("weekdays", ["Caturday"], "SAT"),
        ("composition", [{"op": "union", "calendar": "x"}], '"op": "include" or "exclude"'),
    ],
)
def test_bad_values_are_refused_naming_the_field_and_the_form(field, value, form):
    values = {"timezone": "UTC", field: value}

    errors = field_errors(values)

    assert list(errors) == [field]
    assert form in errors[field]
