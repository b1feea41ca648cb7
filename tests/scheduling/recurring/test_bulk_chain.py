"""The chain step for a whole batch (bulk.py: the cron's search shared by the heads that share a
cron, zone, DST policy and instant) gives every head the successors the row-by-row chain gives
it, on a corpus of schedules covering DST, calendars, overlap, catch-up, max_fires, jitter,
@every anchors, bounds and lateness, at several sweep instants."""

from datetime import UTC, datetime, timedelta

import pytest

from scheduling.recurring.bulk import batch_successors
from scheduling.recurring.conf import recurring_settings
from scheduling.recurring.models import ScheduledOccurrence
from scheduling.recurring.timeline import occurrence_successors
from scheduling.time.calendars.models import Calendar
from tests.scheduling.recurring.conftest import make_schedule

HOUR = timedelta(hours=1)
SPRING = datetime(2027, 3, 28, 0, 30, tzinfo=UTC)  # Paris skips 02:00-03:00 local that night
AUTUMN = datetime(2027, 10, 31, 0, 30, tzinfo=UTC)  # Paris lives 02:00-03:00 local twice
THANKSGIVING = datetime(2027, 11, 24, 14, 0, tzinfo=UTC)  # the day before


def corpus():
    """(schedule fields, the head's due time, its planned time if jitter or a hold moved it,
    its missed run): each a head occurrence just delivered."""
    daily = {"cron": "0 0 * * *", "starts_at": SPRING - 30 * 24 * HOUR}
    cases = [
        # shared crons, each schedule with its own starts_at (the sharing's key case)
        *[({**daily, "starts_at": SPRING - k * HOUR}, SPRING, None, 0) for k in range(40, 45)],
        ({**daily, "starts_at": SPRING + 30 * HOUR}, SPRING, None, 0),  # starts later
        ({**daily, "ends_at": SPRING + HOUR}, SPRING, None, 0),  # ends before its next fire
        # @every: the anchor is each schedule's own starts_at
        *[
            ({"cron": "@every 90m", "starts_at": SPRING - k * HOUR}, SPRING, None, 0)
            for k in (3, 7)
        ],
        ({"cron": f"@at {(SPRING + 5 * HOUR).isoformat()}"}, SPRING, None, 0),
        # DST in Paris: the gap shifted or skipped, the repeated hour once, twice or auto
        *[
            (
                {"cron": "30 2 * * *", "timezone": "Europe/Paris", "dst_gap_policy": gap},
                due,
                None,
                0,
            )
            for gap in ("shift", "skip")
            for due in (SPRING - 24 * HOUR, SPRING)
        ],
        *[
            (
                {"cron": "30 2 * * *", "timezone": "Europe/Paris", "dst_repeat_policy": repeat},
                AUTUMN,
                None,
                0,
            )
            for repeat in ("auto", "once", "twice")
        ],
        # catch-up: fire_all missed every hour since, capped; skip and fire_once jump ahead
        ({"cron": "0 * * * *", "misfire_policy": "fire_all"}, SPRING - 6 * HOUR, None, 0),
        ({"cron": "0 * * * *", "misfire_policy": "fire_all"}, SPRING - 6 * HOUR, None, 95),
        ({"cron": "0 * * * *", "misfire_policy": "skip"}, SPRING - 6 * HOUR, None, 0),
        ({"cron": "0 * * * *", "misfire_policy": "fire_once"}, SPRING - 6 * HOUR, None, 0),
        ({"cron": "0 * * * *", "max_lateness": timedelta(minutes=90)}, SPRING - 6 * HOUR, None, 0),
        # max_fires: one left, none left
        ({"cron": "0 * * * *", "max_fires": 5, "fire_count": 4}, SPRING, None, 0),
        ({"cron": "0 * * * *", "max_fires": 5, "fire_count": 5}, SPRING, None, 0),
        # jitter: due after its planned time, which the timeline goes on from
        ({"cron": "0 * * * *", "jitter": 600}, SPRING + timedelta(seconds=77), SPRING, 0),
        # overlap: a buffer_one head held past its planned time goes on from when it went out
        ({"cron": "0 * * * *", "overlap_policy": "buffer_one"}, SPRING + 90 * HOUR / 60, SPRING, 0),
        ({"cron": "0 * * * *", "overlap_policy": "skip"}, SPRING, None, 0),
        # calendars: the holiday skipped, or moved to its end
        *[
            (
                {"cron": "0 9 * * *", "timezone": "America/New_York", "calendars": ["holidays"]}
                | {"calendar_policy": policy},
                THANKSGIVING,
                None,
                0,
            )
            for policy in ("skip", "move")
        ],
    ]
    return cases


def heads(cases):
    Calendar.objects.create(
        name="holidays",
        timezone="America/New_York",
        holiday_rules=["FREQ=YEARLY;BYMONTH=11;BYDAY=4TH"],
    )
    rows = []
    for fields, due_at, planned, missed_run in cases:
        fire_count = fields.pop("fire_count", 0)
        target = {"queue": "", "task": "reports.build"} if "overlap_policy" in fields else {}
        schedule = make_schedule(**{**fields, **target})
        schedule.fire_count = fire_count
        rows.append(
            ScheduledOccurrence(
                schedule=schedule,
                schedule_version=schedule.version,
                due_at=due_at,
                business_due_at=planned,
                missed_run=missed_run,
                status="delivered",
            )
        )
    return rows


@pytest.mark.django_db
@pytest.mark.parametrize("late", [timedelta(0), timedelta(seconds=5), 3 * HOUR, 30 * HOUR])
def test_the_bulk_chain_gives_every_head_the_row_by_row_chains_successors(late):
    rows = heads(corpus())
    conf = recurring_settings()
    for now in sorted({row.due_at + late for row in rows}):
        row_by_row = [s for row in rows for s in occurrence_successors(row, now=now, conf=conf)]

        assert batch_successors(rows, now=now, conf=conf) == row_by_row


@pytest.mark.django_db
def test_the_corpus_meets_each_policy_it_is_meant_to():
    """The comparison above means something: the corpus's heads do get catch-ups, ends, DST
    shifts, calendar moves and jittered due times."""
    rows = heads(corpus())
    conf = recurring_settings()
    now = SPRING + 5 * timedelta(seconds=1)
    successors = [occurrence_successors(row, now=now, conf=conf) for row in rows]

    assert max(len(s) for s in successors) > 2  # a fire_all catch-up
    assert [] in successors  # ends_at, max_fires
    assert any(s and s[0].business_due_at is not None for s in successors)  # jitter
