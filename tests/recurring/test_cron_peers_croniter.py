"""croniter's own cron vectors, transcribed as data.

Source: pallets-eco/croniter, src/croniter/tests/test_croniter.py unless a group names another
file of that directory (test_croniter_dst_repetition.py, test_croniter_range.py,
test_croniter_hash.py, test_croniter_random.py). croniter's naive starts are read in UTC.
croniter puts an optional seconds field last (and a year after it); we read 6 and 7 fields as
Quartz does, seconds first: such cases are transcribed as written (a difference) and again in
Quartz order, with croniter's expected times.
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
    shaped,
)

JAN_2024 = "2024-01-01T00:00:00"


def _days(text: str) -> list[str]:
    return text.split(",")


def _all_sunday_forms(expression: str, days: str) -> list[Vector]:
    """gen_all_sunday_forms: the same days whether Sunday is written SUN, 7 or 0."""
    forms = [expression, expression.replace("Sun", "7"), expression.replace("Sun", "0")]
    return [
        shaped("test_sunday_ranges", form, JAN_2024, "day", _days(days))
        for form in dict.fromkeys(forms)
    ]


VECTORS: list[Vector] = [
    # seconds (croniter writes them last)
    nxt(
        "test_second_sec",
        "* * * * * 15,25",
        "2012-04-06T13:26:10",
        "2012-04-06T13:26:15",
        "2012-04-06T13:26:25",
        "2012-04-06T13:27:15",
    ),
    nxt(
        "test_second_sec (Quartz order)",
        "15,25 * * * * ?",
        "2012-04-06T13:26:10",
        "2012-04-06T13:26:15",
        "2012-04-06T13:26:25",
        "2012-04-06T13:27:15",
    ),
    nxt(
        "test_second",
        "*/1 * * * * *",
        "2012-04-06T13:26:10",
        "2012-04-06T13:26:11",
    ),
    nxt(
        "test_second_repeat",
        "* * * * * */15",
        "2012-04-06T13:26:36",
        "2012-04-06T13:26:45",
        "2012-04-06T13:27:00",
        "2012-04-06T13:27:15",
    ),
    nxt(
        "test_second_repeat (Quartz order)",
        "*/15 * * * * ?",
        "2012-04-06T13:26:36",
        "2012-04-06T13:26:45",
        "2012-04-06T13:27:00",
        "2012-04-06T13:27:15",
    ),
    # minutes, hours, days, months
    nxt("test_minute", "*/1 * * * *", "2010-01-23T12:18:00", "2010-01-23T12:19:00"),
    nxt("test_minute", "*/5 * * * *", "2010-01-23T12:18:00", "2010-01-23T12:20:00"),
    nxt("test_hour", "0 */3 * * *", "2010-01-24T12:02:00", "2010-01-24T15:00:00"),
    nxt(
        "test_day",
        "0 0 */3 * *",
        "2010-02-24T12:09:00",
        "2010-02-25T00:00:00",
        "2010-02-28T00:00:00",
        "2010-03-01T00:00:00",
    ),
    nxt(
        "test_day",
        "0 0 * * *",
        "1996-02-27T00:00:00",
        "1996-02-28T00:00:00",
        "1996-02-29T00:00:00",
    ),
    nxt(
        "test_day",
        "0 0 * * *",
        "2000-02-27T00:00:00",
        "2000-02-28T00:00:00",
        "2000-02-29T00:00:00",
    ),
    nxt(
        "test_weekday",
        "0 0 * * sat",
        "2010-02-25T00:00:00",
        "2010-02-27T00:00:00",
        "2010-03-06T00:00:00",
    ),
    # day-of-month OR day-of-week when both are set
    nxt(
        "test_weekday",
        "0 0 1 * wed",
        "2010-01-25T00:00:00",
        "2010-01-27T00:00:00",
        "2010-02-01T00:00:00",
        "2010-02-03T00:00:00",
    ),
    nxt(
        "test_nth_weekday",
        "0 0 * * sat#1",
        "2010-02-25T00:00:00",
        "2010-03-06T00:00:00",
        "2010-04-03T00:00:00",
    ),
    nxt(
        "test_nth_weekday",
        "0 0 * * wed#5",
        "2010-01-25T00:00:00",
        "2010-03-31T00:00:00",
        "2010-06-30T00:00:00",
        "2010-09-29T00:00:00",
    ),
    # an impossible day-of-month ORed with a day-of-week still fires on the weekdays
    *[
        nxt(
            "test_weekday_day_or_with_impossible_day_of_month",
            expression,
            "2026-01-01T00:00:00",
            *fires,
        )
        for expression, fires in (
            ("0 0 31 2 0", ("2026-02-01T00:00:00", "2026-02-08T00:00:00", "2026-02-15T00:00:00")),
            ("0 0 30 2 0", ("2026-02-01T00:00:00", "2026-02-08T00:00:00", "2026-02-15T00:00:00")),
            ("0 0 31 4 0", ("2026-04-05T00:00:00", "2026-04-12T00:00:00", "2026-04-19T00:00:00")),
        )
    ],
    never("test_impossible_day_of_month_alone_still_raises", "0 0 31 2 *", "2026-01-01T00:00:00"),
    never("test_impossible_day_of_month_alone_still_raises", "0 0 30 2 *", "2026-01-01T00:00:00"),
    never("test_bug34", "* * 31 2 *", "2012-02-24T00:00:00"),
    # Vixie's rule: a day field starting with * turns the OR into an AND
    nxt(
        "test_dom_dow_vixie_cron_bug",
        "0 16 */2 * sat",
        "2023-05-02T00:00:00",
        "2023-05-03T16:00:00",
        "2023-05-05T16:00:00",
        "2023-05-06T16:00:00",
        "2023-05-07T16:00:00",
    ),
    nxt(
        "test_month",
        "0 0 1 * *",
        "2010-01-25T00:00:00",
        "2010-02-01T00:00:00",
        "2010-03-01T00:00:00",
    ),
    # L
    nxt(
        "test_last_day_of_month",
        "0 0 l * *",
        "2015-09-04T00:00:00",
        "2015-09-30T00:00:00",
        "2015-10-31T00:00:00",
        "2015-11-30T00:00:00",
        "2015-12-31T00:00:00",
    ),
    nxt(
        "test_last_day_of_month_with_leap_year",
        "0 0 l * *",
        "2020-02-01T00:00:00",
        "2020-02-29T00:00:00",
        "2020-03-31T00:00:00",
    ),
    nxt(
        "test_last_day_of_month_with_leap_year_century_exception",
        "0 0 l * *",
        "2100-02-01T00:00:00",
        "2100-02-28T00:00:00",
        "2100-03-31T00:00:00",
    ),
    nxt(
        "test_last_day_of_month_with_leap_year_century_exception",
        "0 0 l * *",
        "2400-02-01T00:00:00",
        "2400-02-29T00:00:00",
        "2400-03-31T00:00:00",
    ),
    nxt(
        "test_range_with_uppercase_last_day_of_month",
        "0 0 29-L * *",
        "2015-09-04T00:00:00",
        "2015-09-29T00:00:00",
        "2015-09-30T00:00:00",
    ),
    nxt(
        "test_sunday_to_thursday_with_alpha_conversion",
        "30 22 * * sun-thu",
        "2010-08-25T15:56:00",
        "2010-08-25T22:30:00",
    ),
    # W
    nxt(
        "test_nearest_weekday_basic",
        "0 9 15W * *",
        "2024-01-01T00:00:00",
        "2024-01-15T09:00:00",
        "2024-02-15T09:00:00",
        "2024-03-15T09:00:00",
    ),
    nxt(
        "test_nearest_weekday_saturday", "0 9 15W * *", "2024-06-01T00:00:00", "2024-06-14T09:00:00"
    ),
    nxt("test_nearest_weekday_sunday", "0 9 15W * *", "2024-09-01T00:00:00", "2024-09-16T09:00:00"),
    nxt(
        "test_nearest_weekday_first_saturday",
        "0 9 1W * *",
        "2024-05-31T00:00:00",
        "2024-06-03T09:00:00",
    ),
    nxt(
        "test_nearest_weekday_last_day_sunday",
        "0 9 31W * *",
        "2025-03-01T00:00:00",
        "2025-03-31T09:00:00",
    ),
    nxt(
        "test_nearest_weekday_end_of_month_boundary",
        "0 9 30W * *",
        "2024-11-01T00:00:00",
        "2024-11-29T09:00:00",
    ),
    nxt(
        "test_nearest_weekday_end_of_month_boundary",
        "0 9 31W * *",
        "2024-11-01T00:00:00",
        "2024-11-29T09:00:00",
    ),
    nxt(
        "test_nearest_weekday_wn_format",
        "0 9 W15 * *",
        "2024-01-01T00:00:00",
        "2024-01-15T09:00:00",
    ),
    accepted("test_nearest_weekday_is_valid", "0 9 15W * *"),
    accepted("test_nearest_weekday_is_valid", "0 9 1W * *"),
    accepted("test_nearest_weekday_is_valid", "0 9 31W * *"),
    refused("test_nearest_weekday_is_valid", "0 9 15W,16 * *"),
    refused("test_nearest_weekday_is_valid", "0 9 1,15W * *"),
    refused("test_nearest_weekday_is_valid", "0 9 0W * *"),
    refused("test_nearest_weekday_is_valid", "0 9 32W * *"),
    nxt(
        "test_nearest_weekday_iteration",
        "0 0 1W * *",
        "2023-12-31T00:00:00",
        "2024-01-01T00:00:00",
        "2024-02-01T00:00:00",
        "2024-03-01T00:00:00",
        "2024-04-01T00:00:00",
        "2024-05-01T00:00:00",
        "2024-06-03T00:00:00",
    ),
    nxt(
        "test_mixdow (the time is worked out)",
        "1 1 7,14,21,L * *",
        "2018-10-01T00:00:00",
        "2018-10-07T01:01:00",
    ),
    # match
    match("test_match", "0 0 * * *", "2019-01-14T00:00:00"),
    nomatch("test_match", "0 0 * * *", "2019-01-14T00:01:00"),
    match("test_match", "0 0 * * * 1", "2023-05-25T00:00:01"),
    match("test_issue151", "* * * * *", "2019-01-14T11:00:00"),
    # DST: Athens, Warsaw, Sao Paulo, Adelaide, London, Paris, Hebron, New York
    nxt(
        "test_timezone_winter_time",
        "*/30 * * * *",
        "2013-10-27T02:00:00+03:00",
        "2013-10-27T02:30:00+03:00",
        "2013-10-27T03:00:00+03:00",
        "2013-10-27T03:30:00+03:00",
        "2013-10-27T03:00:00+02:00",
        "2013-10-27T03:30:00+02:00",
        "2013-10-27T04:00:00+02:00",
        "2013-10-27T04:30:00+02:00",
        tz="Europe/Athens",
    ),
    nxt(
        "test_timezone_summer_time",
        "*/30 * * * *",
        "2013-03-31T01:00:00+02:00",
        "2013-03-31T01:30:00+02:00",
        "2013-03-31T02:00:00+02:00",
        "2013-03-31T02:30:00+02:00",
        "2013-03-31T04:00:00+03:00",
        "2013-03-31T04:30:00+03:00",
        tz="Europe/Athens",
    ),
    nxt(
        "test_std_dst",
        "0 0 * * *",
        "2017-03-26T00:00:00+01:00",
        "2017-03-27T00:00:00+02:00",
        tz="Europe/Warsaw",
    ),
    nxt(
        "test_std_dst",
        "0 * * * *",
        "2017-03-26T01:00:00+01:00",
        "2017-03-26T03:00:00+02:00",
        tz="Europe/Warsaw",
    ),
    nxt(
        "test_std_dst",
        "0 0 * * *",
        "2017-10-29T00:00:00+02:00",
        "2017-10-30T00:00:00+01:00",
        tz="Europe/Warsaw",
    ),
    nxt(
        "test_std_dst",
        "0 * * * *",
        "2017-10-29T01:59:00+02:00",
        "2017-10-29T02:00:00+02:00",
        "2017-10-29T02:00:00+01:00",
        "2017-10-29T03:00:00+01:00",
        "2017-10-29T04:00:00+01:00",
        tz="Europe/Warsaw",
    ),
    *[
        nxt("test_std_dst2", "0 0 * * *", start, fire, tz="America/Sao_Paulo")
        for start, fire in (
            ("2018-02-17T21:00:00", "2018-02-18T00:00:00-03:00"),
            ("2018-02-17T22:00:00", "2018-02-18T00:00:00-03:00"),
            ("2018-02-17T23:00:00", "2018-02-18T00:00:00-03:00"),
            ("2018-02-18T00:00:00", "2018-02-19T00:00:00-03:00"),
            ("2018-02-17T21:05:00", "2018-02-18T00:00:00-03:00"),
            ("2018-02-17T22:05:00", "2018-02-18T00:00:00-03:00"),
            ("2018-02-17T23:05:00", "2018-02-18T00:00:00-03:00"),
            ("2018-02-18T00:05:00", "2018-02-19T00:00:00-03:00"),
        )
    ],
    nxt(
        "test_std_dst3",
        "0 0 24 * *",
        "2020-04-15T00:00:00",
        "2020-04-24T00:00:00+09:30",
        tz="Australia/Adelaide",
    ),
    nxt(
        "test_dst_daily",
        "7 0 * * *",
        "2025-03-30T00:00:00",
        "2025-03-30T00:07:00+00:00",
        "2025-03-31T00:07:00+01:00",
        "2025-04-01T00:07:00+01:00",
        tz="Europe/London",
    ),
    nxt(
        "test_dst_hourly",
        "7 * * * *",
        "2025-03-30T00:00:00",
        "2025-03-30T00:07:00+00:00",
        "2025-03-30T02:07:00+01:00",
        "2025-03-30T03:07:00+01:00",
        tz="Europe/London",
    ),
    nxt(
        "test_dst_issue90_st31ny",
        "1 2 * * *",
        "2020-03-29T01:59:55+01:00",
        "2020-03-29T03:00:00+02:00",
        "2020-03-30T02:01:00+02:00",
        "2020-03-31T02:01:00+02:00",
        tz="Europe/Paris",
    ),
    nxt(
        "test_dst_iter",
        "0 0 * * *",
        "2022-03-25T00:00:00",
        "2022-03-26T00:00:00+02:00",
        "2022-03-27T01:00:00+03:00",
        "2022-03-28T00:00:00+03:00",
        tz="Asia/Hebron",
    ),
    nxt(
        "test_issue_k11",
        "* * * * * ",
        "2019-01-14T11:00:59",
        "2019-01-14T11:01:00-05:00",
        tz="America/New_York",
    ),
    nxt(
        "test_croniter_range.py test_extra_hour_day_prio",
        "0 3 * * *",
        "2020-03-07T00:00:00",
        "2020-03-07T03:00:00-05:00",
        "2020-03-08T03:00:00-04:00",
        "2020-03-09T03:00:00-04:00",
        "2020-03-10T03:00:00-04:00",
        tz="America/New_York",
    ),
    nxt(
        "test_croniter_dst_repetition.py CroniterDST138Test",
        "*/5 * * * *",
        "2024-01-25T04:46:00",
        "2024-01-25T04:50:00",
        "2024-01-25T04:55:00",
        "2024-01-25T05:00:00",
    ),
    # last weekday of the month: croniter writes L5, Quartz and cronsim 5L
    nxt(
        "test_lwom_friday",
        "0 0 * * L5",
        "1987-01-15T00:00:00",
        "1987-01-30T00:00:00",
        "1987-02-27T00:00:00",
    ),
    nxt(
        "test_lwom_friday (5L)",
        "0 0 * * 5L",
        "1987-01-15T00:00:00",
        "1987-01-30T00:00:00",
        "1987-02-27T00:00:00",
        "1987-03-27T00:00:00",
        "1987-04-24T00:00:00",
        "1987-05-29T00:00:00",
        "1987-06-26T00:00:00",
        "1987-07-31T00:00:00",
        "1987-08-28T00:00:00",
        "1987-09-25T00:00:00",
        "1987-10-30T00:00:00",
        "1987-11-27T00:00:00",
        "1987-12-25T00:00:00",
    ),
    nxt(
        "test_lwom_friday_2hours (5L)",
        "0 1,5 * * 5L",
        "1987-01-15T00:00:00",
        "1987-01-30T01:00:00",
        "1987-01-30T05:00:00",
        "1987-02-27T01:00:00",
        "1987-02-27T05:00:00",
        "1987-03-27T01:00:00",
        "1987-03-27T05:00:00",
    ),
    nxt(
        "test_lwom_friday_2xh_2xm (5L)",
        "0,30 1,5 * * 5L",
        "1987-01-15T00:00:00",
        "1987-01-30T01:00:00",
        "1987-01-30T01:30:00",
        "1987-01-30T05:00:00",
        "1987-01-30T05:30:00",
        "1987-02-27T01:00:00",
    ),
    nxt(
        "test_lwom_tue_thu (2L,4L)",
        "0 0 * * 2L,4L",
        "2016-06-01T00:00:00",
        "2016-06-28T00:00:00",
        "2016-06-30T00:00:00",
        "2016-07-26T00:00:00",
        "2016-07-28T00:00:00",
        "2016-08-25T00:00:00",
        "2016-08-30T00:00:00",
        "2016-09-27T00:00:00",
        "2016-09-29T00:00:00",
        "2016-10-25T00:00:00",
        "2016-10-27T00:00:00",
    ),
    nxt(
        "test_hash_mixup_all_fri_3rd_sat",
        "0 0 * * 6#3",
        "2021-03-01T00:00:00",
        "2021-03-20T00:00:00",
    ),
    nxt(
        "test_hash_mixup_all_fri_3rd_sat",
        "0 0 * * 5",
        "2021-03-01T00:00:00",
        "2021-03-05T00:00:00",
        "2021-03-12T00:00:00",
        "2021-03-19T00:00:00",
        "2021-03-26T00:00:00",
    ),
    refused("test_hash_mixup_all_fri_3rd_sat", "0 0 * * 5,6#3"),
    # croniter refuses 5,L6 for mixing; we refuse it for the prefix form L6
    refused("test_lwom_mixup_all_fri_last_sat", "0 0 * * 5,L6"),
    nxt(
        "test_lwom_mixup_firstlast_sat (6L,6#1)",
        "0 0 * * 6L,6#1",
        "2021-03-01T00:00:00",
        "2021-03-06T00:00:00",
        "2021-03-27T00:00:00",
        "2021-04-03T00:00:00",
        "2021-04-24T00:00:00",
        "2021-05-01T00:00:00",
        "2021-05-29T00:00:00",
    ),
    nxt(
        "test_lwom_mixup_4th_and_last (1#4,1L)",
        "0 0 * * 1#4,1L",
        "2021-11-01T00:00:00",
        "2021-11-22T00:00:00",
        "2021-11-29T00:00:00",
        "2021-12-27T00:00:00",
        "2022-01-24T00:00:00",
        "2022-01-31T00:00:00",
    ),
    refused("test_nth_out_of_range", "* * * * 1#6"),
    # ?
    nxt("test_question_mark", "0 0 1 * ?", "2010-08-25T15:56:00", "2010-09-01T00:00:00"),
    refused("test_invalid_question_mark", "? * * * *"),
    refused("test_invalid_question_mark", "* ? * * *"),
    refused("test_invalid_question_mark", "* * ?,* * *"),
    # the year field: croniter's 7 fields are min hour dom month dow sec year
    nxt(
        "test_year",
        "0 0 11 * * 0 2060",
        "2050-01-01T00:00:00",
        "2060-01-11T00:00:00",
        "2060-02-11T00:00:00",
    ),
    nxt(
        "test_year (Quartz order)",
        "0 0 0 11 * ? 2060",
        "2050-01-01T00:00:00",
        "2060-01-11T00:00:00",
        "2060-02-11T00:00:00",
    ),
    nxt(
        "test_year (Quartz order)",
        "0 0 0 11 * ? 2050-2060",
        "2055-01-30T00:00:00",
        "2055-02-11T00:00:00",
    ),
    nxt(
        "test_year (Quartz order)",
        "0 0 0 29 2 ? 2025,2021-2023,2028",
        "2020-01-01T00:00:00",
        "2028-02-29T00:00:00",
    ),
    nxt(
        "test_year (Quartz order)",
        "0 0 0 29 2 ? 2025,*",
        "2020-01-01T00:00:00",
        "2020-02-29T00:00:00",
    ),
    nxt(
        "test_year (Quartz order)",
        "0 0 0 29 2 ? 2022/3",
        "2020-01-01T00:00:00",
        "2028-02-29T00:00:00",
    ),
    nxt(
        "test_year (Quartz order)",
        "0 0 0 29 2 ? 2023-2035/3",
        "2020-01-01T00:00:00",
        "2032-02-29T00:00:00",
    ),
    nxt(
        "test_year_with_other_field (Quartz order)",
        "0 0 0 31 11-12 ? 2023",
        "2000-01-30T00:00:00",
        "2023-12-31T00:00:00",
    ),
    nxt(
        "test_year_with_other_field (Quartz order)",
        "0 0 0 31 1-2 ? 2023-2025",
        "2024-12-30T00:00:00",
        "2025-01-31T00:00:00",
    ),
    match("test_year_match (Quartz order)", "* * * * * ? 2024", "2024-01-01T00:00:00"),
    nomatch("test_year_match (Quartz order)", "* * * * * ? 2024-2026", "2027-01-01T00:00:00"),
    nomatch("test_year_match (Quartz order)", "* * * * * ? 2024/2", "2025-01-01T00:00:00"),
    never("test_year_bad_date_error (Quartz order)", "* * * * * ? 2020", "2030-01-01T00:00:00"),
    never(
        "test_year_bad_date_error (Quartz order)", "* * * 29 2 ? 2021-2023", "2000-01-01T00:00:00"
    ),
    nxt(
        "test_year_with_second_at_beginning",
        "59 58 23 31 12 * 2070",
        "2050-01-01T00:00:00",
        "2070-12-31T23:58:59",
    ),
    refused("test_invalid_year", "0 0 1 * * 0 1000"),
    refused("test_invalid_year", "0 0 1 * * 0 99999"),
    refused("test_invalid_year", "0 0 1 * * 0 2070#3"),
    nxt("test_issue_142_dow", "35 * 1-l/8 * *", "2020-01-01T00:00:00", "2020-01-01T00:35:00"),
    refused("test_overflow", "0-10000000 * * * *"),
    nxt("test_issue156", "* * * * *,0", "2019-01-14T11:00:59.999999", "2019-01-14T11:01:00"),
    refused("test_issue156", "* * * * *,b"),
    nxt("test_issue156", "0 0 * * *,sat#3", "2019-01-14T11:00:59.999999", "2019-01-19T00:00:00"),
    refused("test_issue_k6", "0 0 0 0 0"),
    refused("test_issue_k6", "0 0 0 1 0"),
    refused("test_issue_k34", "4 0 L/2 2 0"),
    nxt(
        "test_issue_k33",
        "30 23 1-7 JAN MON-FRI#1",
        "2018-01-01T00:00:00",
        "2018-01-01T23:30:00",
        "2018-01-02T23:30:00",
    ),
    accepted("test_issue_k33", "30 6 1-7 MAY MON#1"),
    # older bug reports
    nxt(
        "test_bug2",
        "0 * * 3 *",
        "2012-01-01T00:00:00",
        "2012-03-01T00:00:00",
        "2012-03-01T01:00:00",
        "2012-03-01T02:00:00",
    ),
    nxt(
        "test_bug3",
        "00 03 16,30 * *",
        "2013-03-01T12:17:34.257877",
        "2013-03-16T03:00:00",
        "2013-03-30T03:00:00",
        "2013-04-16T03:00:00",
    ),
    nxt("test_bug57", "0 4/6 * * *", "2012-02-24T00:00:00", "2012-02-24T04:00:00"),
    nxt("test_bug57", "0 0/6 * * *", "2012-02-24T00:00:00", "2012-02-24T06:00:00"),
    nxt("test_multiple_months", "0 0 1 3,6,9,12 *", "2016-03-01T00:00:00", "2016-06-01T00:00:00"),
    accepted("test_revert_issue_90_aka_support_dow7", "* * * * 1-7"),
    accepted("test_revert_issue_90_aka_support_dow7", "* * * * 7"),
    # croniter's extensions: H (hashed) and R (random)
    accepted("test_croniter_hash.py test_hash_daily", "H H * * *"),
    accepted("test_croniter_random.py test_random", "R R * * *"),
    # wrap-around day-of-week ranges, in every Sunday spelling (start 2024-01-01, a Monday)
    *_all_sunday_forms(
        "0 0 * * Sun-Sun",
        "2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31",
    ),
    *_all_sunday_forms(
        "0 0 * * Mon-Sun",
        "2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31",
    ),
    *_all_sunday_forms(
        "0 0 * * Tue-Sun",
        "2,3,4,5,6,7,9,10,11,12,13,14,16,17,18,19,20,21,23,24,25,26,27,28,30,31,1,2,3,4",
    ),
    *_all_sunday_forms(
        "0 0 * * Wed-Sun",
        "3,4,5,6,7,10,11,12,13,14,17,18,19,20,21,24,25,26,27,28,31,1,2,3,4,7,8,9,10,11",
    ),
    *_all_sunday_forms(
        "0 0 * * Thu-Sun",
        "4,5,6,7,11,12,13,14,18,19,20,21,25,26,27,28,1,2,3,4,8,9,10,11,15,16,17,18,22,23",
    ),
    *_all_sunday_forms(
        "0 0 * * Fri-Sun",
        "5,6,7,12,13,14,19,20,21,26,27,28,2,3,4,9,10,11,16,17,18,23,24,25,1,2,3,8,9,10",
    ),
    *_all_sunday_forms(
        "0 0 * * Sat-Sun",
        "6,7,13,14,20,21,27,28,3,4,10,11,17,18,24,25,2,3,9,10,16,17,23,24,30,31,6,7,13,14",
    ),
    *_all_sunday_forms(
        "0 0 * * Sun-Mon",
        "7,8,14,15,21,22,28,29,4,5,11,12,18,19,25,26,3,4,10,11,17,18,24,25,31,1,7,8,14,15",
    ),
    *_all_sunday_forms(
        "0 0 * * Sun-Tue",
        "2,7,8,9,14,15,16,21,22,23,28,29,30,4,5,6,11,12,13,18,19,20,25,26,27,3,4,5,10,11",
    ),
    *_all_sunday_forms(
        "0 0 * * Sun-Wed",
        "2,3,7,8,9,10,14,15,16,17,21,22,23,24,28,29,30,31,4,5,6,7,11,12,13,14,18,19,20,21",
    ),
    *_all_sunday_forms(
        "0 0 * * Sun-Thu",
        "2,3,4,7,8,9,10,11,14,15,16,17,18,21,22,23,24,25,28,29,30,31,1,4,5,6,7,8,11,12",
    ),
    *_all_sunday_forms(
        "0 0 * * Sun-Fri",
        "2,3,4,5,7,8,9,10,11,12,14,15,16,17,18,19,21,22,23,24,25,26,28,29,30,31,1,2,4,5",
    ),
    *_all_sunday_forms(
        "0 0 * * Sun-Sat",
        "2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31",
    ),
    shaped(
        "test_sunday_ranges",
        "0 0 * * Thu-Tue/2",
        JAN_2024,
        "day",
        _days("2,4,6,9,11,13,16,18,20,23,25,27,30,1,3,6,8,10,13,15,17,20,22,24,27,29,2,5,7,9"),
    ),
    shaped(
        "test_sunday_ranges",
        "0 0 * * Thu-Tue/3",
        JAN_2024,
        "day",
        _days("4,7,11,14,18,21,25,28,1,4,8,11,15,18,22,25,29,3,7,10,14,17,21,24,28,31,4,7,11,14"),
    ),
    # wrap-around month ranges (test_mth_ranges_from: "<2-digit year> <month>")
    *[
        shaped("test_mth_ranges_from", expression, JAN_2024, "year-month", fires.split(","))
        for expression, fires in (
            (
                "0 0 1 Jan-Dec *",
                "24 2,24 3,24 4,24 5,24 6,24 7,24 8,24 9,24 10,24 11,24 12,25 1,25 2,25 3,25 4,25 5",
            ),
            (
                "0 0 1 Nov-Mar *",
                "24 2,24 3,24 11,24 12,25 1,25 2,25 3,25 11,25 12,26 1,26 2,26 3,26 11,26 12,27 1,27 2",
            ),
            (
                "0 0 1 Apr-Feb *",
                "24 2,24 4,24 5,24 6,24 7,24 8,24 9,24 10,24 11,24 12,25 1,25 2,25 4,25 5,25 6,25 7",
            ),
            (
                "0 0 1 Apr-Mar/3 *",
                "24 4,24 7,24 10,25 1,25 4,25 7,25 10,26 1,26 4,26 7,26 10,27 1,27 4,27 7,27 10,28 1",
            ),
            (
                "0 0 1 Apr-Mar/2 *",
                "24 3,24 4,24 6,24 8,24 10,24 12,25 3,25 4,25 6,25 8,25 10,25 12,26 3,26 4,26 6,26 8",
            ),
            (
                "0 0 1 Jan-Aug/2 *",
                "24 3,24 5,24 7,25 1,25 3,25 5,25 7,26 1,26 3,26 5,26 7,27 1,27 3,27 5,27 7,28 1",
            ),
            (
                "0 0 1 Jan-Aug/4 *",
                "24 5,25 1,25 5,26 1,26 5,27 1,27 5,28 1,28 5,29 1,29 5,30 1,30 5,31 1,31 5,32 1",
            ),
        )
    ],
]

SECONDS_LAST = "croniter puts seconds after day-of-week; 6 fields are Quartz's here, seconds first"
YEAR_ORDER = "croniter's 7 fields are min hour dom month dow sec year; ours are Quartz's"
GAP = (
    "gap policy kept: a wall time the clocks skip fires once at the first instant after the "
    "jump (02:00 BST) rather than being dropped; nothing is lost"
)
ORDER = "a day-of-week list is a set: its terms may mix (Quartz and cronsim do); croniter refuses"
DIFFERENCES: dict[str, Difference] = {
    "test_second_sec[* * * * * 15,25 @ 2012-04-06T13:26:10]": Difference(SECONDS_LAST, REFUSED),
    "test_second_repeat[* * * * * */15 @ 2012-04-06T13:26:36]": Difference(SECONDS_LAST, REFUSED),
    "test_match[0 0 * * * 1 matches 2023-05-25T00:00:01]": Difference(
        SECONDS_LAST + ": read as 00:00:00 on Sundays, which a Thursday at 00:00:01 is not",
        False,
    ),
    "test_year[0 0 11 * * 0 2060 @ 2050-01-01T00:00:00]": Difference(YEAR_ORDER, REFUSED),
    "test_impossible_day_of_month_alone_still_raises[0 0 31 2 * @ 2026-01-01T00:00:00]": Difference(
        "an expression that can never fire is refused when saved, naming the field, instead "
        "of failing at its first computation",
        REFUSED,
    ),
    "test_impossible_day_of_month_alone_still_raises[0 0 30 2 * @ 2026-01-01T00:00:00]": Difference(
        "refused when saved (see 0 0 31 2 *)", REFUSED
    ),
    "test_bug34[* * 31 2 * @ 2012-02-24T00:00:00]": Difference(
        "refused when saved (see 0 0 31 2 *)", REFUSED
    ),
    "test_dom_dow_vixie_cron_bug[0 16 */2 * sat @ 2023-05-02T00:00:00]": Difference(
        "Vixie cron's rule, kept as cronsim keeps it: a day field starting with * ANDs the two "
        "(odd days that are Saturdays); croniter ORs unless told implement_cron_bug, whose "
        "answer this is",
        (
            "2023-05-13T16:00:00",
            "2023-05-27T16:00:00",
            "2023-06-03T16:00:00",
            "2023-06-17T16:00:00",
        ),
    ),
    "test_range_with_uppercase_last_day_of_month[0 0 29-L * * @ 2015-09-04T00:00:00]": Difference(
        "croniter's extension n-L is not accepted; write 29,30,31 or L-n rules", REFUSED
    ),
    "test_issue_142_dow[35 * 1-l/8 * * @ 2020-01-01T00:00:00]": Difference(
        "croniter's extension n-L is not accepted", REFUSED
    ),
    "test_nearest_weekday_end_of_month_boundary[0 9 31W * * @ 2024-11-01T00:00:00]": Difference(
        "Quartz's reading: 31W fires only in months with a 31st (croniter clamps to the 30th)",
        ("2024-12-31T09:00:00",),
    ),
    "test_nearest_weekday_wn_format[0 9 W15 * * @ 2024-01-01T00:00:00]": Difference(
        "croniter's prefix form W15 is not accepted; write 15W", REFUSED
    ),
    "test_nearest_weekday_is_valid[0 9 15W,16 * *]": Difference(
        "W inside a list is accepted, as Quartz does (the issue asks for it)", "accepted"
    ),
    "test_nearest_weekday_is_valid[0 9 1,15W * *]": Difference(
        "W inside a list is accepted, as Quartz does", "accepted"
    ),
    "test_lwom_friday[0 0 * * L5 @ 1987-01-15T00:00:00]": Difference(
        "croniter's prefix form L5 is not accepted; write 5L (Quartz, cronsim)", REFUSED
    ),
    "test_hash_mixup_all_fri_3rd_sat[0 0 * * 5,6#3]": Difference(ORDER, "accepted"),
    "test_issue156[0 0 * * *,sat#3 @ 2019-01-14T11:00:59.999999]": Difference(
        "a list holding * covers every day; croniter keeps only the # term",
        ("2019-01-15T00:00:00",),
    ),
    "test_issue_k33[30 23 1-7 JAN MON-FRI#1 @ 2018-01-01T00:00:00]": Difference(
        "# follows a single day (Quartz); croniter's range#n is not accepted", REFUSED
    ),
    "test_croniter_hash.py test_hash_daily[H H * * *]": Difference(
        "croniter's hashed H is not accepted: a schedule's times are what it says", REFUSED
    ),
    "test_croniter_random.py test_random[R R * * *]": Difference(
        "croniter's random R is not accepted", REFUSED
    ),
    "test_dst_hourly[7 * * * * @ 2025-03-30T00:00:00]": Difference(
        GAP,
        (
            "2025-03-30T00:07:00+00:00",
            "2025-03-30T02:00:00+01:00",
            "2025-03-30T02:07:00+01:00",
        ),
    ),
    "test_sunday_ranges[0 0 * * Sun-Sun @ 2024-01-01T00:00:00]": Difference(
        "a range whose ends are the same day is that day (Quartz); croniter reads SUN-SUN as "
        "the whole week",
        tuple(
            _days(
                "7,14,21,28,4,11,18,25,3,10,17,24,31,7,14,21,28,5,12,19,26,2,9,16,23,30,7,14,21,28"
            )
        ),
    ),
    "test_sunday_ranges[0 0 * * 7-7 @ 2024-01-01T00:00:00]": Difference(
        "7-7 is Sunday alone (see SUN-SUN)",
        tuple(
            _days(
                "7,14,21,28,4,11,18,25,3,10,17,24,31,7,14,21,28,5,12,19,26,2,9,16,23,30,7,14,21,28"
            )
        ),
    ),
    "test_sunday_ranges[0 0 * * 0-0 @ 2024-01-01T00:00:00]": Difference(
        "0-0 is Sunday alone (see SUN-SUN)",
        tuple(
            _days(
                "7,14,21,28,4,11,18,25,3,10,17,24,31,7,14,21,28,5,12,19,26,2,9,16,23,30,7,14,21,28"
            )
        ),
    ),
    "test_sunday_ranges[0 0 * * Thu-Tue/2 @ 2024-01-01T00:00:00]": Difference(
        "a stepped wrap-around range walks on across the week's end, as Quartz does: THU, SAT, "
        "MON (croniter: THU, SAT, TUE)",
        tuple(
            _days("4,6,8,11,13,15,18,20,22,25,27,29,1,3,5,8,10,12,15,17,19,22,24,26,29,2,4,7,9,11")
        ),
    ),
    "test_mth_ranges_from[0 0 1 Apr-Mar/2 * @ 2024-01-01T00:00:00]": Difference(
        "a stepped wrap-around range walks on across the year's end, as Quartz does: APR, JUN, "
        "AUG, OCT, DEC, FEB (croniter: ... DEC, MAR)",
        tuple(
            _days(
                "24 2,24 4,24 6,24 8,24 10,24 12,25 2,25 4,25 6,25 8,25 10,25 12,26 2,26 4,26 6,26 8"
            )
        ),
    ),
}


@pytest.mark.parametrize("vector", VECTORS, ids=lambda vector: vector.name)
def test_croniter_vector(vector):
    check(vector, DIFFERENCES)


def test_the_croniter_table_is_consistent():
    check_table(VECTORS, DIFFERENCES)
