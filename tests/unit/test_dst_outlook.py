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
