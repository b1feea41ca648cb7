"""cron-utils' own cron vectors, transcribed as data.

Source: jmrozanec/cron-utils, src/test/java/com/cronutils/ —
model/time/ExecutionTimeQuartzIntegrationTest.java (Quartz definition),
model/time/generator/ExecutionTimeUnixIntegrationTest.java (Unix definition), and the
IssueNNNTest.java files named in each group. A ZonedDateTime with a fixed offset runs in the
matching Etc/GMT zone; one with the system zone runs in UTC. Where a test asserts only part of
a time (its minute, its weekday), the rest is worked out from the expression and said so.
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
    never,
    nomatch,
    nxt,
    refused,
)

QUARTZ = "ExecutionTimeQuartzIntegrationTest"
UNIX = "ExecutionTimeUnixIntegrationTest"
MINUS_6 = "Etc/GMT+6"  # UTC-06:00
MINUS_7 = "Etc/GMT+7"
MINUS_8 = "Etc/GMT+8"
NEW_YORK = "America/New_York"


def _issue_110() -> list[Vector]:
    """Quartz #110: day-of-week filters excluding Wednesday and including Thursday."""
    vectors = []
    for expression in (
        "0 0/1 * ? * 5",
        "0 0/1 * ? * 2,5",
        "0 0/1 * ? * THU",
        "0 0/1 * ? * THU,SAT",
        "0 0/1 * ? * 5-6",
        "0 0/1 * ? * THU-FRI",
    ):
        vectors.append(
            nxt(f"{QUARTZ}.issue110", expression, "2016-11-09T01:01:00", "2016-11-10T00:00:00")
        )
        vectors.append(
            nxt(f"{QUARTZ}.issue110", expression, "2016-10-27T23:55:00", "2016-10-27T23:56:00")
        )
    for expression, start in (
        ("0 0/1 * ? * 5", "2016-11-03T23:59:00"),
        ("0 0/1 * ? * 2,5", "2016-11-07T23:59:00"),
        ("0 0/1 * ? * THU", "2016-11-03T23:59:00"),
        ("0 0/1 * ? * THU,SAT", "2016-11-05T23:59:00"),
        ("0 0/1 * ? * 5-6", "2016-11-04T23:59:00"),
        ("0 0/1 * ? * THU-FRI", "2016-11-04T23:59:00"),
    ):
        vectors.append(nxt(f"{QUARTZ}.issue110", expression, start, "2016-11-10T00:00:00"))
    return vectors


def _dst_overlap_new_york() -> list[Vector]:
    """Unix testDSTOverlap: 01:30 on November 1-7, EDT until the day the clocks go back
    (2015-11-01, 2016-11-06), EST after; two of the years the test walks through."""
    fires = ["2015-11-01T01:30:00-04:00"] + [
        f"2015-11-0{day}T01:30:00-05:00" for day in range(2, 8)
    ]
    fires += [f"2016-11-0{day}T01:30:00-04:00" for day in range(1, 7)] + [
        "2016-11-07T01:30:00-05:00"
    ]
    return [
        nxt(f"{UNIX}.testDSTOverlap", "30 1 1-7 11 *", "2015-11-01T00:00:00", *fires, tz=NEW_YORK)
    ]


VECTORS: list[Vector] = [
    # ExecutionTimeQuartzIntegrationTest
    nxt(f"{QUARTZ}.testForCron", "0 11 11 11 11 ?", "2015-04-15T00:00:00", "2015-11-11T11:11:00"),
    nxt(
        f"{QUARTZ}.testShiftTo24thHour",
        "0/1 * * 1/1 * ? *",
        "2016-08-05T23:59:59",
        "2016-08-06T00:00:00",
    ),
    nxt(
        f"{QUARTZ}.testShiftTo32ndDay",
        "0/1 * * 1/1 * ? *",
        "2015-01-31T23:59:59",
        "2015-02-01T00:00:00",
    ),
    nxt(
        f"{QUARTZ}.testTimeShiftingProperlyDone",
        "0 0/10 22 ? * *",
        "2026-01-01T15:27:00",
        "2026-01-01T22:00:00",
    ),
    accepted(f"{QUARTZ}.testMonthRangeExecutionTime", "0 0 0 * JUL-AUG ? *"),
    # the test asserts the minute (10); the date is worked out
    nxt(
        f"{QUARTZ}.testExecutionTimeForRanges",
        "* 10-20 * * * ? 2099",
        "2016-02-29T11:00:00-06:00",
        "2099-01-01T00:10:00-06:00",
        tz=MINUS_6,
    ),
    # the tests assert a Sunday; the date is worked out
    nxt(
        f"{QUARTZ}.testNextExecutionRightDoWForFixedMonth",
        "0 * * ? 5 1 *",
        "2016-03-06T20:17:28-03:00",
        "2016-05-01T00:00:00-03:00",
        tz="Etc/GMT+3",
    ),
    nxt(
        f"{QUARTZ}.testNextExecutionRightDoWForFixedYear",
        "0 * * ? * 1 2099",
        "2016-03-06T20:17:28-03:00",
        "2099-01-04T00:00:00-03:00",
        tz="Etc/GMT+3",
    ),
    refused(f"{QUARTZ}.testNextExecutionWithMonthWildcard", "0 0 12 1W ? *"),
    nxt(
        f"{QUARTZ}.testNextExecutionProducingInvalidValues",
        "0 0 18 ? * MON",
        "2016-03-18T19:02:51.424+09:00",
        "2016-03-21T18:00:00+09:00",
        "2016-03-28T18:00:00+09:00",
        tz="Asia/Tokyo",
    ),
    nomatch(
        f"{QUARTZ}.testMultipleMinuteIntervalMatch", "* * 21-23,0-4 * * ?", "2014-09-20T20:00:00"
    ),
    match(
        f"{QUARTZ}.testMultipleMinuteIntervalMatch", "* * 21-23,0-4 * * ?", "2014-09-20T21:00:00"
    ),
    match(
        f"{QUARTZ}.testMultipleMinuteIntervalMatch", "* * 21-23,0-4 * * ?", "2014-09-20T00:00:00"
    ),
    match(
        f"{QUARTZ}.testMultipleMinuteIntervalMatch", "* * 21-23,0-4 * * ?", "2014-09-20T04:00:00"
    ),
    nomatch(
        f"{QUARTZ}.testMultipleMinuteIntervalMatch", "* * 21-23,0-4 * * ?", "2014-09-20T05:00:00"
    ),
    nxt(
        f"{QUARTZ}.testDayLightSavingsSwitch",
        "* 0/2 * * * ?",
        "2016-03-13T01:59:59",
        "2016-03-13T03:00:00-06:00",
        tz="America/Denver",
    ),
    nxt(
        f"{QUARTZ}.testDayLightSavingsSwitch",
        "* 0/2 * * * ?",
        "2016-03-13T03:01:00",
        "2016-03-13T03:02:00-06:00",
        tz="America/Denver",
    ),
    nxt(
        f"{QUARTZ}.testDayLightSavingsSwitch",
        "* 0/2 * * * ?",
        "2016-03-14T00:00:59",
        "2016-03-14T00:02:00",
    ),
    nxt(
        f"{QUARTZ}.bigNumbersOnDayOfMonthField",
        "0 0 0 31 * ?",
        "2016-11-01T00:00:00",
        "2016-12-31T00:00:00",
    ),
    nxt(
        f"{QUARTZ}.noSpecificDayOfMonthEvaluatedOnLastDay",
        "0 * * ? * *",
        "2016-08-31T10:10:00",
        "2016-08-31T10:11:00",
    ),
    nxt(
        f"{QUARTZ}.testCronWithFirstWorkDayOfWeek",
        "0 0 12 1W * ? *",
        "2016-03-29T00:00:59",
        "2016-04-01T12:00:00",
    ),
    # the test asserts numbers and names give the same time; the time is worked out
    nxt(
        f"{QUARTZ}.testDaysOfWeekNumbersAndNames",
        "0 0 12 ? * 2,3,4,5,6 *",
        "2016-04-22T00:00:00",
        "2016-04-22T12:00:00",
    ),
    nxt(
        f"{QUARTZ}.testDaysOfWeekNumbersAndNames",
        "0 0 12 ? * MON,TUE,WED,THU,FRI *",
        "2016-04-22T00:00:00",
        "2016-04-22T12:00:00",
    ),
    # getMinimumInterval: the gap between the first two fire times after 2016-01-01
    *[
        nxt(f"{QUARTZ}.testMinimumInterval", expression, "2016-01-01T00:00:00", *fires)
        for expression, fires in (
            ("* * * * * ?", ("2016-01-01T00:00:01", "2016-01-01T00:00:02")),
            ("*   *    *  *       * ?", ("2016-01-01T00:00:01", "2016-01-01T00:00:02")),
            ("0/1 * * * * ?", ("2016-01-01T00:00:01", "2016-01-01T00:00:02")),
            ("*/1 * * * * ?", ("2016-01-01T00:00:01", "2016-01-01T00:00:02")),
            ("0 * * * * ?", ("2016-01-01T00:01:00", "2016-01-01T00:02:00")),
            ("0 */1 * * * ?", ("2016-01-01T00:01:00", "2016-01-01T00:02:00")),
            ("0 */5 * * * ?", ("2016-01-01T00:05:00", "2016-01-01T00:10:00")),
            ("0 0 * * * ?", ("2016-01-01T01:00:00", "2016-01-01T02:00:00")),
            ("0 0 */3 * * ?", ("2016-01-01T03:00:00", "2016-01-01T06:00:00")),
            ("0 0 0 * * ?", ("2016-01-02T00:00:00", "2016-01-03T00:00:00")),
        )
    ],
    *_issue_110(),
    nxt(
        f"{QUARTZ}.testNextExecutionTimeProperlySet",
        "0 5/15 * * * ? *",
        "2016-07-30T15:00:00.000001",
        "2016-07-30T15:05:00",
    ),
    nxt(
        f"{QUARTZ}.testNextExecutionTimeProperlySet2",
        "0 3/27 10-14 * * ? *",
        "2016-01-01T10:00:00",
        "2016-01-01T10:03:00",
    ),
    accepted(f"{QUARTZ}.validate31IsSupportedForDoM", "0 0 0 31 * ?"),
    accepted(f"{QUARTZ}.nextExecutionNotFail", "0 0 10 ? * SAT-SUN"),
    nxt(
        f"{QUARTZ}.lastDayOfTheWeek", "0 0 0 ? * L *", "2016-12-22T00:00:00", "2016-12-24T00:00:00"
    ),
    nxt(
        f"{QUARTZ}.nextExecutionWithRangeAndStep",
        "0 0 16-19/2 * * ?",
        "2016-12-27T08:15:00",
        "2016-12-27T16:00:00",
        "2016-12-27T18:00:00",
        "2016-12-28T16:00:00",
        "2016-12-28T18:00:00",
        "2016-12-29T16:00:00",
    ),
    nxt(
        f"{QUARTZ}.checkDayOfMonth31", "0 0 8 31 * ?", "2017-04-10T00:00:00", "2017-05-31T08:00:00"
    ),
    nxt(
        f"{QUARTZ}.checkDayOfMonth31", "0 0 8 31 * ?", "2017-01-10T00:00:00", "2017-01-31T08:00:00"
    ),
    nxt(f"{QUARTZ}.yearConstraint", "0 0 0 1 * ?", "2016-12-31T23:59:59", "2017-01-01T00:00:00"),
    nxt(
        f"{QUARTZ}.yearConstraint", "0 0 0 1 * ? 2017", "2016-12-31T23:59:59", "2017-01-01T00:00:00"
    ),
    nxt(
        f"{QUARTZ}.yearRangeWithStep",
        "0 0 0 1 3 ? 2001-2020/2",
        "2015-01-15T00:00:00",
        "2015-03-01T00:00:00",
    ),
    nxt(
        f"{QUARTZ}.yearRangeWithStep",
        "0 0 0 1 3 ? 2001-2020/2",
        "1996-01-15T00:00:00",
        "2001-03-01T00:00:00",
    ),
    # the test walks back through 2020's fourth Sundays; the same set, forward
    nxt(
        f"{QUARTZ}.fourthSundayIn2020",
        "0 0 12 ? * SUN#4 2020",
        "2020-01-01T00:00:00",
        "2020-01-26T12:00:00",
        "2020-02-23T12:00:00",
        "2020-03-22T12:00:00",
    ),
    nxt(
        f"{QUARTZ}.noExecutionBefore1970",
        "0 0 12 * * ?",
        "1900-01-01T00:00:00",
        "1970-01-01T12:00:00",
    ),
    # ExecutionTimeUnixIntegrationTest
    match(f"{UNIX}.testIsMatchForUnix01", "* * * * *", "2016-02-29T11:00:00-06:00", tz=MINUS_6),
    match(f"{UNIX}.testIsMatchForUnix02", "0 * * * 1-5", "2016-03-04T11:00:00-06:00", tz=MINUS_6),
    nxt(
        f"{UNIX}.testEveryTenMinutesNextExecution",
        "*/10 * * * *",
        "2015-09-05T13:43:00-07:00",
        "2015-09-05T13:50:00-07:00",
        tz=MINUS_7,
    ),
    nxt(
        f"{UNIX}.testEveryTwoMinRollsOverHour",
        "*/2 * * * *",
        "2015-09-05T13:56:00-07:00",
        "2015-09-05T13:58:00-07:00",
        "2015-09-05T14:00:00-07:00",
        tz=MINUS_7,
    ),
    nxt(
        f"{UNIX}.testEveryTuesdayAtThirdHourOfDayNextExecution",
        "0 3 * * 3",
        "2015-09-17T00:00:00-07:00",
        "2015-09-23T03:00:00-07:00",
        tz=MINUS_7,
    ),
    nxt(
        f"{UNIX}.testMondayWeekdayNextExecution",
        "* * * * 1",
        "2015-10-13T17:26:54.468-07:00",
        "2015-10-19T00:00:00-07:00",
        tz=MINUS_7,
    ),
    nxt(
        f"{UNIX}.testCorrectMonthScaleForNextExecution1",
        "* * */3 */4 */5",
        "2015-12-10T16:32:56.586-08:00",
        "2016-01-01T00:00:00-08:00",
        tz=MINUS_8,
    ),
    nxt(
        f"{UNIX}.testCorrectMonthScaleForNextExecution2",
        "* * */4 * *",
        "2015-12-10T16:32:56.586-08:00",
        "2015-12-13T00:00:00-08:00",
        tz=MINUS_8,
    ),
    nxt(
        f"{UNIX}.testCorrectNextExecutionDoW",
        "0 0 * * */4",
        "2016-01-28T16:32:56.586-08:00",
        "2016-01-31T00:00:00-08:00",
        "2016-02-04T00:00:00-08:00",
        tz=MINUS_8,
    ),
    nxt(
        f"{UNIX}.testCorrectNextExecutionDoWForLeapYear",
        "0 * * * 1-5",
        "2016-02-29T11:00:00-06:00",
        "2016-02-29T12:00:00-06:00",
        tz=MINUS_6,
    ),
    # the test asserts 23 hours later, in the same zone
    nxt(
        f"{UNIX}.testNextExecutionDaylightSaving",
        "0 17 * * *",
        "2016-03-12T17:00:00",
        "2016-03-13T17:00:00-04:00",
        tz=NEW_YORK,
    ),
    nxt(f"{UNIX}.testNextExecution2014", "0 8 * * 1", "2014-11-30T00:00:00", "2014-12-01T08:00:00"),
    nxt(
        f"{UNIX}.testNextExecution2016", "1 0 * * tue", "2016-05-24T01:02:50", "2016-05-31T00:01:00"
    ),
    nxt(
        f"{UNIX}.testWrongNextExecutionOnDSTEnd",
        "* * * * *",
        "2016-02-20T23:00:00-03:00",
        "2016-02-20T23:01:00-03:00",
        tz="America/Sao_Paulo",
    ),
    *_dst_overlap_new_york(),
    nxt(
        f"{UNIX}.testDSTGap",
        "15 2 7-14 3 *",
        "2015-03-07T00:00:00",
        "2015-03-07T02:15:00-05:00",
        "2015-03-09T02:15:00-04:00",
        "2015-03-10T02:15:00-04:00",
        tz=NEW_YORK,
    ),
    never(f"{UNIX}.invalidDayInMonthCron", "0 0 31 2 *", "2015-09-17T00:00:00"),
    nxt(f"{UNIX}.testEveryDayPerWeek", "0 0 * * */3", "2018-02-08T00:00:00", "2018-02-10T00:00:00"),
    # Issue215Test: MON-FRI and FRI-SAT, Quartz and cron4j (5 fields)
    *[
        nxt(f"Issue215Test.{test}", expression, start, fire)
        for test, expression, start, fire in (
            (
                "testWorkdayBugWithNextMonth",
                "0 0 8 ? * MON-FRI",
                "2017-07-07T10:00:00",
                "2017-07-10T08:00:00",
            ),
            (
                "testWorkdayBugWithNextMonth",
                "0 0 8 ? * MON-FRI",
                "2017-08-31T10:00:00",
                "2017-09-01T08:00:00",
            ),
            (
                "testWorkdayBugWithNextMonth",
                "0 0 8 ? * MON-FRI",
                "2017-06-30T10:00:00",
                "2017-07-03T08:00:00",
            ),
            (
                "testWorkdayBugWithNextMonth",
                "0 0 8 ? * MON-FRI",
                "2017-09-29T10:00:00",
                "2017-10-02T08:00:00",
            ),
            (
                "testWorkdayBugWithNextMonth",
                "0 8 * * MON-FRI",
                "2017-07-07T10:00:00",
                "2017-07-10T08:00:00",
            ),
            (
                "testWorkdayBugWithNextMonth",
                "0 8 * * MON-FRI",
                "2017-08-31T10:00:00",
                "2017-09-01T08:00:00",
            ),
            (
                "testWorkdayBugWithNextMonth",
                "0 8 * * MON-FRI",
                "2017-06-30T10:00:00",
                "2017-07-03T08:00:00",
            ),
            (
                "testWorkdayBugWithNextMonth",
                "0 8 * * MON-FRI",
                "2017-09-29T10:00:00",
                "2017-10-02T08:00:00",
            ),
            (
                "testFridayToSaturday",
                "0 0 8 ? * FRI-SAT",
                "2017-03-28T00:00:00",
                "2017-03-31T08:00:00",
            ),
            (
                "testFridayToSaturday",
                "0 0 8 ? * FRI-SAT",
                "2017-03-31T09:00:00",
                "2017-04-01T08:00:00",
            ),
            (
                "testFridayToSaturday",
                "0 0 8 ? * FRI-SAT",
                "2017-07-10T00:00:00",
                "2017-07-14T08:00:00",
            ),
            (
                "testFridayToSaturday",
                "0 0 8 ? * FRI-SAT",
                "2017-07-15T00:00:00",
                "2017-07-15T08:00:00",
            ),
            (
                "testFridayToSaturday",
                "0 0 8 ? * FRI-SAT",
                "2010-12-31T00:00:00",
                "2010-12-31T08:00:00",
            ),
            (
                "testFridayToSaturday",
                "0 0 8 ? * FRI-SAT",
                "2010-12-31T09:00:00",
                "2011-01-01T08:00:00",
            ),
            (
                "testFridayToSaturday",
                "0 8 * * FRI-SAT",
                "2017-03-28T00:00:00",
                "2017-03-31T08:00:00",
            ),
            (
                "testFridayToSaturday",
                "0 8 * * FRI-SAT",
                "2017-03-31T09:00:00",
                "2017-04-01T08:00:00",
            ),
            (
                "testFridayToSaturday",
                "0 8 * * FRI-SAT",
                "2017-07-10T00:00:00",
                "2017-07-14T08:00:00",
            ),
            (
                "testFridayToSaturday",
                "0 8 * * FRI-SAT",
                "2017-07-15T00:00:00",
                "2017-07-15T08:00:00",
            ),
            (
                "testFridayToSaturday",
                "0 8 * * FRI-SAT",
                "2010-12-31T00:00:00",
                "2010-12-31T08:00:00",
            ),
            (
                "testFridayToSaturday",
                "0 8 * * FRI-SAT",
                "2010-12-31T09:00:00",
                "2011-01-01T08:00:00",
            ),
        )
    ],
    # Issue423Test: a wrap-around hour range 17-0 on Saturdays, Australia/Perth
    *[
        nxt(
            "Issue423Test.issue423",
            "0 0 0-07,17-0 ? * SAT",
            f"2020-04-25T{start}:00",
            f"2020-04-25T{fire}:00+08:00",
            tz="Australia/Perth",
        )
        for start, fire in (
            ("00:00", "01:00"),
            ("00:30", "01:00"),
            ("06:00", "07:00"),
            ("07:00", "17:00"),
            ("16:00", "17:00"),
            ("17:00", "18:00"),
            ("18:00", "19:00"),
        )
    ],
    # Issue418Test: a Quartz day-of-week step of 7
    nxt(
        "Issue418Test.testQuartzEvery7DaysStartingSunday",
        "0 0 2 ? * 1/7 *",
        "2020-04-01T03:00:00",
        "2020-04-05T02:00:00",
        "2020-04-12T02:00:00",
    ),
    refused("Issue418Test.testInvalidWeekDayStart", "0 0 2 ? * 0/7 *"),
    refused("Issue418Test.testInvalidWeekDayEnd", "0 0 2 ? * 1/8 *"),
    # Issue305Test: odd years only (2015, 2017, 2019 before 2021)
    nxt(
        "Issue305Test.testIssue305",
        "0 0 0 15 8 ? 2015-2099/2",
        "2015-01-01T00:00:00",
        "2015-08-15T00:00:00",
        "2017-08-15T00:00:00",
        "2019-08-15T00:00:00",
        "2021-08-15T00:00:00",
    ),
    # Issue228Test: a custom definition that ANDs day-of-month and day-of-week
    *[
        nxt(f"Issue228Test.{test}", expression, "2017-09-29T14:46:01.166-07:00", fire, tz=MINUS_7)
        for test, expression, fire in (
            ("testFirstMondayOfTheMonthNextExecution", "0 9 1-7 * 1", "2017-10-02T09:00:00-07:00"),
            (
                "testEveryWeekdayFirstWeekOfMonthNextExecution",
                "0 9 1-7 * 1-5",
                "2017-10-02T09:00:00-07:00",
            ),
            (
                "testEveryWeekendFirstWeekOfMonthNextExecution",
                "0 9 1-7 * 6-7",
                "2017-10-01T09:00:00-07:00",
            ),
            (
                "testEveryWeekdaySecondWeekOfMonthNextExecution",
                "0 9 8-14 * 1-5",
                "2017-10-09T09:00:00-07:00",
            ),
            (
                "testEveryWeekendForthWeekOfMonthNextExecution",
                "0 9 22-28 * 6-7",
                "2017-10-22T09:00:00-07:00",
            ),
        )
    ],
    # Issue388Test: the first Saturday, Quartz SAT#1
    nxt(
        "Issue388Test.testLastAndNextExecutionWithDowAndDom",
        "0 0 8 ? * SAT#1",
        "2019-07-01T08:00:00",
        "2019-07-06T08:00:00",
    ),
    # Issue329Test: an impossible date must not loop for ever
    never("Issue329Test.infiniteLoop", "0 0 30 2 *", "2026-01-01T00:00:00"),
    # Issue143Test: December 31st and the fifth Saturday (the tests walk back; worked forward)
    nxt("Issue143Test.testCase1", "0 0 12 31 12 ? *", "2016-01-01T00:00:00", "2016-12-31T12:00:00"),
    nxt(
        "Issue143Test.testCase2",
        "0 0 12 ? 12 SAT#5 *",
        "2012-01-01T00:00:00",
        "2012-12-29T12:00:00",
    ),
    nxt(
        "Issue143Test.testCase4",
        "0 0 12 ? 1/1 SAT#5 *",
        "2016-10-01T00:00:00",
        "2016-10-29T12:00:00",
    ),
    # Issue440Test / Issue477Test: lists with a start/step, steps in two fields
    nxt(
        "Issue440Test.testCase2",
        "2,1/31 * * * *",
        "2026-01-01T00:00:00",
        "2026-01-01T00:01:00",
        "2026-01-01T00:02:00",
        "2026-01-01T00:32:00",
    ),
    nxt(
        "Issue477Test.testDescribe",
        "*/2 */2 * * *",
        "2026-01-01T00:00:00",
        "2026-01-01T00:02:00",
        "2026-01-01T00:04:00",
    ),
]

GAP = (
    "gap policy kept: a wall time the clocks skip fires once at the first instant after the "
    "jump; cron-utils drops it"
)
NEVER = "an expression that can never fire is refused when saved, naming the field"
DIFFERENCES: dict[str, Difference] = {
    f"{QUARTZ}.noExecutionBefore1970[0 0 12 * * ? @ 1900-01-01T00:00:00]": Difference(
        "the 1970-2099 bound holds for a year field only; without one any start computes "
        "(cron-utils bounds every Quartz expression)",
        ("1900-01-01T12:00:00",),
    ),
    f"{UNIX}.testDSTGap[15 2 7-14 3 * @ 2015-03-07T00:00:00]": Difference(
        GAP,
        ("2015-03-07T02:15:00-05:00", "2015-03-08T03:00:00-04:00", "2015-03-09T02:15:00-04:00"),
    ),
    f"{UNIX}.invalidDayInMonthCron[0 0 31 2 * @ 2015-09-17T00:00:00]": Difference(NEVER, REFUSED),
    "Issue329Test.infiniteLoop[0 0 30 2 * @ 2026-01-01T00:00:00]": Difference(NEVER, REFUSED),
    **{
        f"Issue228Test.{test}[{expression} @ 2017-09-29T14:46:01.166-07:00]": Difference(
            "standard cron ORs a restricted day-of-month and day-of-week (Vixie, cronsim, "
            "croniter); this test builds a cron-utils definition that ANDs them",
            (ours,),
        )
        for test, expression, ours in (
            ("testFirstMondayOfTheMonthNextExecution", "0 9 1-7 * 1", "2017-10-01T09:00:00-07:00"),
            (
                "testEveryWeekdayFirstWeekOfMonthNextExecution",
                "0 9 1-7 * 1-5",
                "2017-10-01T09:00:00-07:00",
            ),
            (
                "testEveryWeekendFirstWeekOfMonthNextExecution",
                "0 9 1-7 * 6-7",
                "2017-09-30T09:00:00-07:00",
            ),
            (
                "testEveryWeekdaySecondWeekOfMonthNextExecution",
                "0 9 8-14 * 1-5",
                "2017-10-02T09:00:00-07:00",
            ),
            (
                "testEveryWeekendForthWeekOfMonthNextExecution",
                "0 9 22-28 * 6-7",
                "2017-09-30T09:00:00-07:00",
            ),
        )
    },
}


@pytest.mark.parametrize("vector", VECTORS, ids=lambda vector: vector.name)
def test_cron_utils_vector(vector):
    check(vector, DIFFERENCES)


def test_the_cron_utils_table_is_consistent():
    check_table(VECTORS, DIFFERENCES)
