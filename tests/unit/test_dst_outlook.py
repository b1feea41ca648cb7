"""The DST outlook (`/api/schedules/{name}/dst/`, the admin's): each change at its exact
instant, whatever the clock's fraction of a second when asked."""

from datetime import UTC, datetime

from scheduling.recurring.dst_outlook import dst_outlook
from scheduling.recurring.models import RecurringSchedule


def test_each_change_is_at_its_whole_second_when_asked_mid_second():
    schedule = RecurringSchedule(name="night", cron="30 1 * * *", timezone="Europe/Paris")
    now = datetime(2026, 12, 1, 9, 15, 7, 932664, tzinfo=UTC)

    spring, autumn = dst_outlook(schedule, now=now)

    assert spring.at == datetime(2027, 3, 28, 1, 0, tzinfo=UTC)
    assert autumn.at == datetime(2027, 10, 31, 1, 0, tzinfo=UTC)
    assert spring.fire_times == [datetime(2027, 3, 28, 0, 30, tzinfo=UTC)]


def test_london_whose_winter_offset_is_zero_changes_by_one_hour_each_way():
    schedule = RecurringSchedule(name="night", cron="30 1 * * *", timezone="Europe/London")
    now = datetime(2026, 10, 1, tzinfo=UTC)

    autumn, spring = dst_outlook(schedule, now=now)

    assert autumn.at == datetime(2026, 10, 25, 1, 0, tzinfo=UTC)
    assert autumn.change == (
        "2026-10-25: clocks go back 1:00:00 at 02:00 BST, to 01:00 GMT (one hour)"
    )
    assert spring.at == datetime(2027, 3, 28, 1, 0, tzinfo=UTC)
    assert spring.change == (
        "2027-03-28: clocks go forward 1:00:00 at 01:00 GMT, to 02:00 BST (one hour)"
    )
    assert spring.fire_times == [datetime(2027, 3, 28, 1, 0, tzinfo=UTC)]  # 01:30 skipped: the jump


def test_dublin_and_lisbon_say_one_hour_too():
    now = datetime(2026, 10, 1, tzinfo=UTC)
    for zone in ("Europe/Dublin", "Europe/Lisbon"):
        schedule = RecurringSchedule(name="night", cron="30 1 * * *", timezone=zone)
        assert [o.change.endswith("(one hour)") for o in dst_outlook(schedule, now=now)] == [
            True,
            True,
        ]


def test_a_half_hour_change_is_said_in_minutes():
    schedule = RecurringSchedule(name="night", cron="30 1 * * *", timezone="Australia/Lord_Howe")

    outlook = dst_outlook(schedule, now=datetime(2026, 10, 1, tzinfo=UTC))

    assert outlook[0].change.endswith("(30 minutes)")
