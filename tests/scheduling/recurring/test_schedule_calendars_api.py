"""A schedule's calendars over REST and in the admin: round trips of `calendars` and
`calendar_policy`, 400s naming them, and previews that show skipped and moved fires."""

import pytest

from scheduling.recurring.models import RecurringSchedule
from scheduling.time.calendars.models import Calendar
from tests.scheduling.recurring.conftest import make_schedule
from tests.scheduling.recurring.test_schedule_admin import SCHEDULES, form_data

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("frozen_clock")]

URL = "/api/schedules/"
WEEKDAYS = {"name": "standup", "cron": "0 9 * * MON-FRI", "timezone": "America/New_York"}


@pytest.fixture(autouse=True)
def calendars():
    rules = ["FREQ=YEARLY;BYMONTH=11;BYDAY=4TH"]
    Calendar.objects.create(name="us-holidays", timezone="America/New_York", holiday_rules=rules)
    Calendar.objects.create(name="weekends", timezone="America/New_York", weekdays=["SAT", "SUN"])


def test_the_calendar_fields_round_trip(api):
    body = {**WEEKDAYS, "queue": "q", "calendars": ["us-holidays"], "calendar_policy": "move"}

    created = api.post(URL, body, format="json")

    assert created.status_code == 201, created.content
    assert created.json()["calendars"] == ["us-holidays"]
    assert created.json()["calendar_policy"] == "move"
    changed = api.patch(URL + "standup/", {"calendars": ["weekends", "us-holidays"]}, format="json")
    assert changed.json()["calendars"] == ["weekends", "us-holidays"]
    assert changed.json()["version"] == 2
    assert api.get(URL + "standup/").json()["calendar_policy"] == "move"


def test_a_schedule_without_calendars_says_so(api):
    body = api.post(URL, {**WEEKDAYS, "queue": "q"}, format="json").json()

    assert (body["calendars"], body["calendar_policy"]) == ([], "skip")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("calendars", ["nowhere"], "No calendar is named nowhere"),
        ("calendars", "us-holidays", "list"),
        ("calendars", ["two words"], "slug"),
        ("calendar_policy", "postpone", "valid choice"),
    ],
)
def test_bad_calendar_fields_answer_400_naming_the_field(api, field, value, message):
    response = api.post(URL, {**WEEKDAYS, "queue": "q", field: value}, format="json")

    assert response.status_code == 400
    assert list(response.json()) == [field]
    assert message in str(response.json()[field])
    assert not RecurringSchedule.objects.exists()


def test_the_preview_marks_skipped_and_moved_fires(api):
    api.post(URL, {**WEEKDAYS, "queue": "q", "calendars": ["us-holidays"]}, format="json")

    skipped = api.get(URL + "standup/preview/?count=4").json()["fire_times"]
    api.patch(URL + "standup/", {"calendar_policy": "move"}, format="json")
    moved = api.get(URL + "standup/preview/?count=4").json()["fire_times"]

    assert [entry.get("status", "fires") for entry in skipped] == [
        "fires",
        "fires",
        "fires",
        "skipped",
        "fires",
    ]
    assert skipped[3] == {
        "at": "2026-11-26T14:00:00Z",
        "local": "2026-11-26T09:00:00-05:00",
        "status": "skipped",
        "planned": "2026-11-26T14:00:00Z",
    }
    assert moved[3] == {
        "at": "2026-11-27T05:00:00Z",  # the end of Thanksgiving Day
        "local": "2026-11-27T00:00:00-05:00",
        "status": "moved",
        "planned": "2026-11-26T14:00:00Z",
    }


def test_the_admin_round_trips_the_calendar_fields(admin_client):
    data = form_data(calendars="weekends, us-holidays", calendar_policy="move")

    response = admin_client.post(SCHEDULES + "add/", data)

    assert response.status_code == 302, response.content.decode()[:3000]
    schedule = RecurringSchedule.objects.get(name="nightly")
    assert (schedule.calendars, schedule.calendar_policy) == (["weekends", "us-holidays"], "move")
    page = admin_client.get(SCHEDULES + f"{schedule.pk}/change/").content.decode()
    assert 'value="weekends, us-holidays"' in page


def test_the_admin_refuses_an_unknown_calendar_naming_it(admin_client):
    response = admin_client.post(SCHEDULES + "add/", form_data(calendars="nowhere"))

    assert response.status_code == 200
    assert "No calendar is named nowhere" in response.content.decode()


def test_the_admin_preview_shows_skipped_and_moved_fires(admin_client):
    query = {**WEEKDAYS, "calendars": "us-holidays", "calendar_policy": "skip"}
    query |= {"starts_at_0": "2026-11-22", "starts_at_1": "12:00:00"}

    skipped = admin_client.get(SCHEDULES + "preview/", query).content.decode()
    moved = admin_client.get(SCHEDULES + "preview/", {**query, "calendar_policy": "move"})

    assert "Thu 2026-11-26 09:00:00 EST: skipped (excluded until Fri 2026-11-27" in skipped
    assert "Fri 2026-11-27 00:00:00 EST (moved from Thu 2026-11-26 09:00:00 EST)" in (
        moved.content.decode()
    )


def test_a_schedule_page_shows_its_preview_with_calendars(admin_client):
    schedule = make_schedule(**{**WEEKDAYS, "cron": "0 9 * * *"}, calendars=["weekends"])

    page = admin_client.get(SCHEDULES + f"{schedule.pk}/change/").content.decode()

    assert "Sat 2026-11-28 09:00:00 EST: skipped" in page


def test_the_admin_preview_shows_the_calendars_and_the_dst_outlook_of_the_forms_values(
    admin_client,
):
    # 02:30 does not exist in New York on 2027-03-14; Thanksgiving (2026-11-26) is excluded.
    query = {**WEEKDAYS, "cron": "30 2 * * *", "calendars": "us-holidays"}
    query |= {"starts_at_0": "2026-11-22", "starts_at_1": "12:00:00"}

    shifted = admin_client.get(SCHEDULES + "preview/", query).content.decode()
    skipped = admin_client.get(SCHEDULES + "preview/", {**query, "dst_gap_policy": "skip"})

    assert "Thu 2026-11-26 02:30:00 EST: skipped (excluded until Fri 2026-11-27" in shifted
    assert "2027-03-14: clocks go forward 1:00:00 at 02:00 EST, to 03:00 EDT" in shifted
    assert "dst_gap_policy shift: a skipped wall time: fire at the jump" in shifted
    assert "Fire times from 00:00 EST to 05:00 EDT: 03:00:00 EDT" in shifted
    skipped_page = skipped.content.decode()
    assert "dst_gap_policy skip: a skipped wall time: do not fire" in skipped_page
    assert "Fire times from 00:00 EST to 05:00 EDT: none" in skipped_page
    assert "Thu 2026-11-26 02:30:00 EST: skipped" in skipped_page
    assert "<p>" not in shifted + skipped_page  # in the preview box, a paragraph is a refusal
