"""Quartz's own cron vectors, transcribed as data.

Source: quartz-scheduler/quartz, quartz/src/test/java/org/quartz/CronExpressionTest.java (the
test named in each group), and the class documentation of
quartz/src/main/java/org/quartz/CronExpression.java for the wrap-around ranges it documents.
Quartz evaluates in the JVM's default zone; these cases hold no DST change, so they run in UTC.
isSatisfiedBy(t) is replayed as "the next fire time after t - 1 s is t".
"""

import pytest

from tests.recurring.test_cron_peers_harness import (
    REFUSED,
    Difference,
    Vector,
    accepted,
    check,
    check_table,
    match,
    nomatch,
    nxt,
    refused,
)


def _satisfied(test: str, expression: str, yes: list[str], no: list[str]) -> list[Vector]:
    return [match(test, expression, at) for at in yes] + [
        nomatch(test, expression, at) for at in no
    ]


VECTORS: list[Vector] = [
    # testIsSatisfiedBy
    *_satisfied(
        "testIsSatisfiedBy",
        "0 15 10 * * ? 2005",
        yes=[
            "2005-06-01T10:15:00",
            "2005-06-30T10:15:00",
            "2005-03-01T10:15:00",
            "2005-03-31T10:15:00",
            "2005-02-01T10:15:00",
            "2005-02-28T10:15:00",
        ],
        no=[
            "2006-06-30T10:15:00",
            "2005-06-01T10:16:00",
            "2005-06-01T10:14:00",
            "2005-03-01T10:16:00",
            "2005-03-01T10:14:00",
            "2005-02-01T10:16:00",
            "2005-02-01T10:14:00",
        ],
    ),
    *_satisfied(
        "testIsSatisfiedBy",
        "0 15 10 12 * ? 2005",
        yes=["2005-12-12T10:15:00"],
        no=["2005-12-11T10:15:00", "2005-12-13T10:15:00"],
    ),
    # testIsSatisfiedByLastDayOfMonth
    *_satisfied(
        "testIsSatisfiedByLastDayOfMonth",
        "0 15 10 L * ? 2005",
        yes=["2005-12-31T10:15:00", "2005-09-30T10:15:00"],
        no=["2005-12-30T10:15:00", "2005-09-29T10:15:00"],
    ),
    *_satisfied(
        "testIsSatisfiedByLastDayOfMonth",
        "0 15 10 L 2 ? 2005",
        yes=["2005-02-28T10:15:00"],
        no=["2005-02-27T10:15:00"],
    ),
    *_satisfied(
        "testIsSatisfiedByLastDayOfMonth",
        "0 15 10 L 2 ? 2004",
        yes=["2004-02-29T10:15:00"],
        no=["2004-02-28T10:15:00"],
    ),
    # testIsSatisfiedByLastDayOfMonthWithOffset
    *_satisfied(
        "testIsSatisfiedByLastDayOfMonthWithOffset",
        "0 15 10 L-2 * ? 2005",
        yes=["2005-12-29T10:15:00"],
        no=["2005-12-28T10:15:00", "2005-12-30T10:15:00", "2005-12-31T10:15:00"],
    ),
    *_satisfied(
        "testIsSatisfiedByLastDayOfMonthWithOffset",
        "0 15 10 L-1 * ? 2005",
        yes=["2005-09-29T10:15:00"],
        no=["2005-09-27T10:15:00", "2005-09-28T10:15:00", "2005-09-30T10:15:00"],
    ),
    *_satisfied(
        "testIsSatisfiedByLastDayOfMonthWithOffset",
        "0 15 10 L-3 2 ? 2005",
        yes=["2005-02-25T10:15:00"],
        no=["2005-02-24T10:15:00", "2005-02-26T10:15:00", "2005-02-28T10:15:00"],
    ),
    *_satisfied(
        "testIsSatisfiedByLastDayOfMonthWithOffset",
        "0 15 10 L-3 2 ? 2000",
        yes=["2000-02-26T10:15:00"],
        no=["2000-02-25T10:15:00", "2000-02-27T10:15:00", "2000-02-29T10:15:00"],
    ),
    # testLastDayOffset: L-n, L-nW, and L / W inside lists
    *_satisfied(
        "testLastDayOffset",
        "0 15 10 L-2 * ? 2010",
        yes=["2010-10-29T10:15:00", "2010-02-26T10:15:00", "2010-06-28T10:15:00"],
        no=["2010-10-28T10:15:00", "2010-02-25T10:15:00", "2010-06-27T10:15:00"],
    ),
    *_satisfied(
        "testLastDayOffset",
        "0 15 10 L-5W * ? 2010",
        yes=["2010-10-26T10:15:00", "2010-09-24T10:15:00"],
        no=[
            "2010-10-25T10:15:00",
            "2010-10-27T10:15:00",
            "2010-09-23T10:15:00",
            "2010-09-25T10:15:00",
        ],
    ),
    match("testLastDayOffset", "0 15 10 L-1 * ? 2010", "2010-10-30T10:15:00"),
    match("testLastDayOffset", "0 15 10 L-1W * ? 2010", "2010-10-29T10:15:00"),
    *_satisfied(
        "testLastDayOffset",
        "0 15 10 1,L * ? 2010",
        yes=[
            "2010-10-01T10:15:00",
            "2010-10-31T10:15:00",
            "2010-02-01T10:15:00",
            "2010-02-28T10:15:00",
        ],
        no=["2010-10-30T10:15:00", "2010-02-27T10:15:00"],
    ),
    *_satisfied(
        "testLastDayOffset",
        "0 15 10 L-1W,L-1 * ? 2010",
        yes=[
            "2010-10-29T10:15:00",
            "2010-10-30T10:15:00",
            "2010-02-26T10:15:00",
            "2010-02-27T10:15:00",
        ],
        no=[],
    ),
    *_satisfied(
        "testLastDayOffset",
        "0 15 10 2W,16 * ? 2010",
        yes=[
            "2010-10-01T10:15:00",
            "2010-10-16T10:15:00",
            "2010-11-02T10:15:00",
            "2010-11-16T10:15:00",
        ],
        no=["2010-10-02T10:15:00"],
    ),
    # testQuartz571: a month name in mixed case, a trailing space (the test asserts that a next
    # fire time is computed; the time below is worked out from the expression)
    nxt("testQuartz571", "19 15 10 4 Apr ? ", "2026-01-01T00:00:00", "2026-04-04T10:15:19"),
    # testQtz259 / testQtz259LW: successive fire times differ (the times are worked out)
    nxt(
        "testQtz259",
        "0 0 0 L-2 * ? *",
        "2026-01-01T00:00:00",
        "2026-01-29T00:00:00",
        "2026-02-26T00:00:00",
        "2026-03-29T00:00:00",
        "2026-04-28T00:00:00",
    ),
    nxt(
        "testQtz259LW",
        "0 0 0 LW * ? *",
        "2026-01-01T00:00:00",
        "2026-01-30T00:00:00",
        "2026-02-27T00:00:00",
        "2026-03-31T00:00:00",
        "2026-04-30T00:00:00",
    ),
    # testQuartz574: unknown month names
    refused("testQuartz574", "* * * * Foo ? "),
    refused("testQuartz574", "* * * * Jan-Foo ? "),
    # testQuartz621: Quartz wants ? in one of day-of-month and day-of-week
    refused("testQuartz621", "0 0 * * * *"),
    refused("testQuartz621", "0 0 * 4 * *"),
    refused("testQuartz621", "0 0 * * * 4"),
    # testQuartz640: L with other days of the week
    refused("testQuartz640", "0 43 9 ? * SAT,SUN,L"),
    refused("testQuartz640", "0 43 9 ? * 6,7,L"),
    accepted("testQuartz640", "0 43 9 ? * 5L"),
    # testQtz96: W after a day above 31
    refused("testQtz96", "0/5 * * 32W 1 ?"),
    # testTooManyTokens
    refused("testTooManyTokens", "0 15 10 * * ? 2005 *"),
    # Issue #58: steps larger than the field, and "/" without a number
    *[
        refused(test, expression)
        for test, expressions in {
            "testSecRangeIntervalAfterSlash": (
                "/120 0 8-18 ? * 2-6",
                "0/120 0 8-18 ? * 2-6",
                "/ 0 8-18 ? * 2-6",
                "0/ 0 8-18 ? * 2-6",
                "/60 0 8-18 ? * 2-6",
            ),
            "testMinRangeIntervalAfterSlash": (
                "0 /120 8-18 ? * 2-6",
                "0 0/120 8-18 ? * 2-6",
                "0 / 8-18 ? * 2-6",
                "0 0/ 8-18 ? * 2-6",
                "0 /60 8-18 ? * 2-6",
            ),
            "testHourRangeIntervalAfterSlash": (
                "0 0 /120 ? * 2-6",
                "0 0 0/120 ? * 2-6",
                "0 0 / ? * 2-6",
                "0 0 0/ ? * 2-6",
                "0 0 /24 ? * 2-6",
            ),
            "testDayOfMonthRangeIntervalAfterSlash": (
                "0 0 0 /120 * 2-6",
                "0 0 0 0/120 * 2-6",
                "0 0 0 / * 2-6",
                "0 0 0 0/ * 2-6",
            ),
            "testMonthRangeIntervalAfterSlash": (
                "0 0 0 ? /120 2-6",
                "0 0 0 ? 0/120 2-6",
                "0 0 0 ? / 2-6",
                "0 0 0 ? 0/ 2-6",
                "0 0 0 ? /13 2-6",
            ),
            "testDayOfWeekRangeIntervalAfterSlash": (
                "0 0 0 ? * /120",
                "0 0 0 ? * 0/120",
                "0 0 0 ? * /",
                "0 0 0 ? * 0/",
            ),
        }.items()
        for expression in expressions
    ],
    # testGetTimeBefore: the intervals between successive fire times (replayed from a start)
    nxt(
        "testGetTimeBefore",
        "* * * * * ? *",
        "2026-01-01T00:00:00",
        "2026-01-01T00:00:01",
        "2026-01-01T00:00:02",
    ),
    nxt(
        "testGetTimeBefore",
        "0 * * * * ? *",
        "2026-01-01T00:00:00",
        "2026-01-01T00:01:00",
        "2026-01-01T00:02:00",
    ),
    nxt(
        "testGetTimeBefore",
        "0/15 * * * * ? *",
        "2026-01-01T00:00:00",
        "2026-01-01T00:00:15",
        "2026-01-01T00:00:30",
    ),
    nxt(
        "testGetTimeBefore",
        "0 0 5 * * ? *",
        "2026-01-01T00:00:00",
        "2026-01-01T05:00:00",
        "2026-01-02T05:00:00",
    ),
    nxt(
        "testGetTimeBefore",
        "0/30 1 2 * * ? *",
        "2026-01-01T00:00:00",
        "2026-01-01T02:01:00",
        "2026-01-01T02:01:30",
        "2026-01-02T02:01:00",
    ),
    # testIsValidExpression
    accepted("testIsValidExpression", "* * * * * ?"),
    accepted("testIsValidExpression", "0 * 5 * * ?"),
    accepted("testIsValidExpression", "0 15 10 L-1W,L-1 * ? 2010"),
    refused("testIsValidExpression", "Ralf 30 * * * ?"),
    refused("testIsValidExpression", "0 30 Ralf * * ?"),
    refused("testIsValidExpression", "kilroy was here"),
    refused("testIsValidExpression", "L 30 * * * ?"),
    # test1420: the first weekday and the last day of each month
    nxt(
        "test1420",
        "0 0 0 1W * ?",
        "2025-11-18T10:15:00",
        "2025-12-01T00:00:00",
        "2026-01-01T00:00:00",
        "2026-02-02T00:00:00",
        "2026-03-02T00:00:00",
        "2026-04-01T00:00:00",
        "2026-05-01T00:00:00",
        "2026-06-01T00:00:00",
        "2026-07-01T00:00:00",
        "2026-08-03T00:00:00",
        "2026-09-01T00:00:00",
        "2026-10-01T00:00:00",
        "2026-11-02T00:00:00",
        "2026-12-01T00:00:00",
    ),
    nxt(
        "test1420",
        "59 59 23 L * ?",
        "2025-11-18T10:15:00",
        "2025-11-30T23:59:59",
        "2025-12-31T23:59:59",
        "2026-01-31T23:59:59",
        "2026-02-28T23:59:59",
        "2026-03-31T23:59:59",
        "2026-04-30T23:59:59",
        "2026-05-31T23:59:59",
        "2026-06-30T23:59:59",
        "2026-07-31T23:59:59",
        "2026-08-31T23:59:59",
        "2026-09-30T23:59:59",
        "2026-10-31T23:59:59",
        "2026-11-30T23:59:59",
        "2026-12-31T23:59:59",
    ),
    # CronExpression's class documentation: overflowing ranges "22-2" and "NOV-FEB", the
    # example "0 0 14-6 ? * FRI-MON", and "7/6" in the month field meaning July only (the
    # times are worked out from the documented meaning; 2026-01-02 is a Friday)
    nxt(
        "CronExpression javadoc",
        "0 0 22-2 * * ?",
        "2026-01-01T12:00:00",
        "2026-01-01T22:00:00",
        "2026-01-01T23:00:00",
        "2026-01-02T00:00:00",
        "2026-01-02T01:00:00",
        "2026-01-02T02:00:00",
        "2026-01-02T22:00:00",
    ),
    nxt(
        "CronExpression javadoc",
        "0 0 0 1 NOV-FEB ?",
        "2026-01-15T00:00:00",
        "2026-02-01T00:00:00",
        "2026-11-01T00:00:00",
        "2026-12-01T00:00:00",
        "2027-01-01T00:00:00",
    ),
    nxt(
        "CronExpression javadoc",
        "0 0 14-6 ? * FRI-MON",
        "2026-01-01T12:00:00",
        "2026-01-02T00:00:00",
        "2026-01-02T01:00:00",
        "2026-01-02T02:00:00",
        "2026-01-02T03:00:00",
        "2026-01-02T04:00:00",
        "2026-01-02T05:00:00",
        "2026-01-02T06:00:00",
        "2026-01-02T14:00:00",
    ),
    nxt(
        "CronExpression javadoc",
        "0 0 0 1 7/6 ?",
        "2026-01-01T00:00:00",
        "2026-07-01T00:00:00",
        "2027-07-01T00:00:00",
    ),
]

DIFFERENCES: dict[str, Difference] = {
    "testQuartz621[0 0 * * * *]": Difference(
        "leniency kept: * in both day fields means every day, as in 5-field cron; Quartz "
        "insists on ? in one of them",
        "accepted",
    ),
    "testQuartz621[0 0 * 4 * *]": Difference(
        "leniency kept: a * day-of-week beside a set day-of-month is read as ?",
        "accepted",
    ),
    "testQuartz621[0 0 * * * 4]": Difference(
        "leniency kept: a * day-of-month beside a set day-of-week is read as ?",
        "accepted",
    ),
}


@pytest.mark.parametrize("vector", VECTORS, ids=lambda vector: vector.name)
def test_quartz_vector(vector):
    check(vector, DIFFERENCES)


def test_the_quartz_table_is_consistent():
    check_table(VECTORS, DIFFERENCES)
    assert REFUSED not in {difference.ours for difference in DIFFERENCES.values()}
