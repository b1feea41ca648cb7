"""Quiet hours on a scheduled model: each policy as rows are created and as they are moved,
with due_at truthful, the business time kept, and the history saying why. The test model is
ScheduledPing, given quiet hours (nights in Europe/Paris) for each test."""

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling.rows.history.record import written_for
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.quiet.hours import DailyQuietHours
from tests.factories import PingFactory
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db

Status = ScheduledEvent.Status
PARIS = ZoneInfo("Europe/Paris")
NIGHTS = DailyQuietHours(start=time(22), end=time(7), tz="Europe/Paris")
HELD = "held for quiet hours until 07:00 (Europe/Paris)"


def paris(*args):
    return datetime(*args, tzinfo=PARIS).astimezone(UTC)


EVENING = paris(2030, 6, 12, 21, 0)
MORNING = paris(2030, 6, 13, 7, 0)


@pytest.fixture
def quiet(monkeypatch):
    def declare(policy):
        monkeypatch.setattr(ScheduledPing, "quiet_hours", NIGHTS)
        monkeypatch.setattr(ScheduledPing, "quiet_policy", policy)
        monkeypatch.setattr(ScheduledPing, "quiet_fold_by", ("ping",))

    return declare


def create(ping, *due_times):
    return ScheduledPing.objects.bulk_create(
        ScheduledPing(ping=ping, due_at=at) for at in due_times
    )


def reload(rows):
    return [ScheduledPing.objects.get(pk=row.pk) for row in rows]


def entries(row):
    return list(written_for(ScheduledPing, row.pk).order_by("at", "pk").values("kind", "detail"))


def test_a_row_due_in_the_night_is_held_to_the_morning_when_created(quiet):
    quiet("deliver_at_end")
    night, day = reload(create(PingFactory(), paris(2030, 6, 12, 23, 0), EVENING))

    assert (night.due_at, night.business_due_at, night.status) == (
        MORNING,
        paris(2030, 6, 12, 23, 0),
        Status.PENDING,
    )
    assert (day.due_at, day.business_due_at) == (EVENING, None)
    assert entries(night) == [
        {
            "kind": "rescheduled",
            "detail": {
                "how": "quiet hours",
                "reason": HELD,
                "before": paris(2030, 6, 12, 23, 0).isoformat(),
                "after": MORNING.isoformat(),
            },
        }
    ]
    assert entries(day) == []


def test_a_row_saved_one_at_a_time_is_held_too(quiet):
    quiet("deliver_at_end")
    row = ScheduledPing.objects.create(ping=PingFactory(), due_at=paris(2030, 6, 13, 6, 59))

    (row,) = reload([row])
    assert (row.due_at, row.business_time) == (MORNING, paris(2030, 6, 13, 6, 59))
    assert [entry["detail"]["reason"] for entry in entries(row)] == [HELD]


def test_fold_keeps_the_latest_row_of_each_entity_and_cancels_the_others_naming_it(quiet):
    quiet("fold")
    ping, other = PingFactory(), PingFactory()
    rows = reload(create(ping, *(paris(2030, 6, 12, 22, m) for m in (15, 30, 45))))
    (alone,) = reload(create(other, paris(2030, 6, 12, 23, 0)))

    *folded, latest = rows
    assert (latest.status, latest.due_at) == (Status.PENDING, MORNING)
    assert latest.business_due_at == paris(2030, 6, 12, 22, 45)
    for row in folded:
        reason = f"folded into #{latest.pk} (quiet hours)"
        assert (row.status, row.cancel_reason) == (Status.CANCELLED, reason)
        assert entries(row)[-1] == {"kind": "cancelled", "detail": {"reason": reason}}
    assert (alone.status, alone.due_at) == (Status.PENDING, MORNING)


def test_a_row_due_at_the_span_end_wins_the_fold(quiet):
    quiet("fold")
    ping = PingFactory()
    held, on_time = reload(create(ping, paris(2030, 6, 13, 6, 30), MORNING))

    assert (on_time.status, on_time.business_due_at) == (Status.PENDING, None)
    assert (held.status, held.cancel_reason) == (
        Status.CANCELLED,
        f"folded into #{on_time.pk} (quiet hours)",
    )


def test_skip_cancels_the_row_with_the_reason(quiet):
    quiet("skip")
    (row,) = reload(create(PingFactory(), paris(2030, 6, 13, 1, 0)))

    reason = "skipped for quiet hours until 07:00 (Europe/Paris)"
    assert (row.status, row.cancel_reason, row.due_at) == (
        Status.CANCELLED,
        reason,
        paris(2030, 6, 13, 1, 0),
    )
    assert entries(row) == [{"kind": "cancelled", "detail": {"reason": reason}}]


def test_a_row_rescheduled_into_the_night_is_held_and_its_history_says_why(quiet):
    quiet("deliver_at_end")
    (row,) = create(PingFactory(), EVENING)

    assert ScheduledPing.objects.filter(pk=row.pk).reschedule(paris(2030, 6, 12, 23, 30)) == 1

    (row,) = reload([row])
    assert (row.due_at, row.business_due_at, row.version) == (
        MORNING,
        paris(2030, 6, 12, 23, 30),
        2,
    )
    assert [(e["kind"], e["detail"]["how"]) for e in entries(row)] == [
        ("rescheduled", "reschedule"),
        ("rescheduled", "quiet hours"),
    ]
    assert entries(row)[-1]["detail"]["reason"] == HELD


def test_rows_shifted_into_the_night_fold_into_one(quiet):
    quiet("fold")
    ping = PingFactory()
    first, second = create(ping, paris(2030, 6, 12, 20, 0), paris(2030, 6, 12, 20, 30))

    assert ScheduledPing.objects.filter(ping=ping).shift(timedelta(hours=3)) == 2

    first, second = reload([first, second])
    assert (second.status, second.due_at, second.business_due_at) == (
        Status.PENDING,
        MORNING,
        paris(2030, 6, 12, 23, 30),
    )
    assert (first.status, first.cancel_reason) == (
        Status.CANCELLED,
        f"folded into #{second.pk} (quiet hours)",
    )


def test_a_held_row_shifted_is_placed_again_from_its_shifted_business_time(quiet):
    quiet("deliver_at_end")
    (row,) = create(PingFactory(), paris(2030, 6, 12, 22, 30))
    rows = ScheduledPing.objects.filter(pk=row.pk)

    rows.shift(timedelta(hours=1))  # asked for 23:30: still the night, still 07:00
    (row,) = reload([row])
    assert (row.due_at, row.business_due_at) == (MORNING, paris(2030, 6, 12, 23, 30))

    rows.shift(timedelta(hours=-2))  # asked for 21:30: no longer quiet, due then
    (row,) = reload([row])
    assert (row.due_at, row.business_time) == (paris(2030, 6, 12, 21, 30),) * 2


def test_reschedule_with_into_the_night_skips_under_skip(quiet):
    quiet("skip")
    (row,) = create(PingFactory(), EVENING)

    ScheduledPing.objects.filter(pk=row.pk).reschedule_with(
        "moved by its ping", due_at=paris(2030, 6, 13, 2, 0)
    )

    (row,) = reload([row])
    assert (row.status, row.cancel_reason) == (
        Status.CANCELLED,
        "skipped for quiet hours until 07:00 (Europe/Paris)",
    )
    assert [e["kind"] for e in entries(row)] == ["rescheduled", "cancelled"]


def test_a_model_without_quiet_hours_moves_in_one_statement():
    (row,) = create(PingFactory(), EVENING)

    with CaptureQueriesContext(connection) as queries:
        ScheduledPing.objects.filter(pk=row.pk).reschedule(paris(2030, 6, 12, 23, 30))
        ScheduledPing.objects.bulk_create([ScheduledPing(ping=row.ping, due_at=EVENING)])

    assert len(queries) == 2
    assert reload([row])[0].due_at == paris(2030, 6, 12, 23, 30)
