"""Admin: schedules listed with next and last fire, the enabled toggle, a fire-time preview,
actions; occurrences with the framework's actions plus skip."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME

from scheduling.recurring.models import RecurringSchedule
from tests.conftest import CURRENT_TIME
from tests.scheduling.recurring.conftest import make_schedule, pending, sweep_at

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("frozen_clock")]

SCHEDULES = "/admin/scheduling_recurring/recurringschedule/"
OCCURRENCES = "/admin/scheduling_recurring/scheduledoccurrence/"


def form_data(**fields):
    data = {
        "name": "nightly",
        "enabled": "on",
        "cron": "0 3 * * *",
        "timezone": "Europe/Paris",
        "task": "",
        "queue": "exports",
        "payload_template": '{"day": "${yesterdaysDate}"}',
        "starts_at_0": "2026-11-22",
        "starts_at_1": "12:00:00",
        "ends_at_0": "",
        "ends_at_1": "",
        "misfire_policy": "fire_once",
        "catchup_window": "P1D",
        "max_lateness": "",
        "template_timezone": "",
        # The policies, as the form renders them by default.
        "overlap_policy": "allow",
        "dst_gap_policy": "shift",
        "dst_repeat_policy": "auto",
        "max_fires": "",
        "resume_policy": "skip",
        "paused_note": "",
    }
    return {**data, **fields}


def test_the_list_shows_next_and_last_fire_times(admin_client):
    make_schedule(name="every-minute")
    sweep_at(CURRENT_TIME.replace(minute=1))

    response = admin_client.get(SCHEDULES)

    assert response.status_code == 200
    content = response.content.decode()
    assert "every-minute" in content
    assert "Next fire" in content
    assert "Nov. 22, 2026, 12:02 p.m." in content  # next fire
    assert "Nov. 22, 2026, 12:01 p.m." in content  # last fired


def test_the_enabled_toggle_on_the_list_cancels_the_pending_occurrence(admin_client):
    schedule = make_schedule(name="toggle")

    response = admin_client.post(
        SCHEDULES,
        {
            "form-TOTAL_FORMS": "1",
            "form-INITIAL_FORMS": "1",
            "form-0-id": str(schedule.pk),
            "_save": "Save",
        },
    )

    assert response.status_code == 302
    schedule.refresh_from_db()
    assert schedule.enabled is False
    assert pending(schedule) == []


def test_adding_a_schedule_materialises_its_next_fire(admin_client):
    response = admin_client.post(SCHEDULES + "add/", form_data())

    assert response.status_code == 302, response.content.decode()[:2000]
    schedule = RecurringSchedule.objects.get(name="nightly")
    assert [row.due_at for row in pending(schedule)] == [datetime(2026, 11, 23, 2, tzinfo=UTC)]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"cron": "0 3 * * * * * *"}, "cron has 8 fields"),
        ({"timezone": "Paris"}, "is not a known IANA time zone name"),
        ({"task": "exports.build"}, "Set exactly one target"),
        ({"payload_template": '{"a": "${later}"}'}, "unknown variable ${later}"),
        ({"catchup_window": "0"}, "catchup_window must be a positive duration of at most 366"),
        ({"catchup_window": "a day"}, "Enter a valid duration"),
        ({"template_timezone": "Seattle"}, "is not a known IANA time zone name"),
    ],
)
def test_the_form_refuses_bad_input_with_the_reason(admin_client, fields, message):
    response = admin_client.post(SCHEDULES + "add/", form_data(**fields))

    assert response.status_code == 200
    assert message in response.content.decode()
    assert not RecurringSchedule.objects.exists()


def test_the_form_previews_the_next_ten_fire_times(admin_client):
    schedule = make_schedule(name="weekdays", cron="0 9 * * MON-FRI", timezone="Europe/Paris")

    content = admin_client.get(SCHEDULES + f"{schedule.pk}/change/").content.decode()

    assert "Next 10 fire times" in content
    assert "Mon 2026-11-23 09:00:00 CET" in content
    assert content.count("09:00:00 CET") == 10


def test_the_payload_preview_computes_the_variables_in_the_template_timezone(admin_client):
    # Cron read in UTC (01:00), variables in Los Angeles, where it is still the day before.
    schedule = make_schedule(
        name="bridge-style",
        cron="0 1 * * *",
        timezone="UTC",
        template_timezone="America/Los_Angeles",
        payload_template={"day": "${todaysDate}"},
    )

    content = admin_client.get(SCHEDULES + f"{schedule.pk}/change/").content.decode()

    assert "Mon 2026-11-23 01:00:00 UTC" in content
    assert "&quot;day&quot;: &quot;2026-11-22&quot;" in content


def test_catchup_window_and_template_timezone_are_saved_from_the_form(admin_client):
    fields = form_data(catchup_window="PT6H", template_timezone="America/Los_Angeles")

    assert admin_client.post(SCHEDULES + "add/", fields).status_code == 302

    schedule = RecurringSchedule.objects.get(name="nightly")
    assert (schedule.catchup_window, schedule.template_timezone) == (
        timedelta(hours=6),
        "America/Los_Angeles",
    )


def test_the_form_previews_values_not_saved_yet(admin_client):
    query = {"cron": "0 9 * * MON-FRI", "timezone": "Europe/Paris"}
    query |= {"starts_at_0": "2026-11-22", "starts_at_1": "12:00:00"}

    content = admin_client.get(SCHEDULES + "preview/", query).content.decode()

    assert content.count("09:00:00 CET") == 10
    assert content.index("Mon 2026-11-23 09:00:00 CET") < content.index("Tue 2026-11-24")
    assert not RecurringSchedule.objects.exists()


def test_the_add_form_carries_the_preview_box_and_its_script(admin_client):
    content = admin_client.get(SCHEDULES + "add/").content.decode()

    assert f'class="fire-preview" data-url="{SCHEDULES}preview/"' in content
    assert "scheduling/fire_preview.js" in content


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"cron": "0 25 * * *", "timezone": "UTC"}, "cron: "),
        ({"cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "timezone: "),
    ],
)
def test_the_preview_names_the_field_it_cannot_use(admin_client, query, message):
    response = admin_client.get(SCHEDULES + "preview/", query)

    assert response.status_code == 200
    assert message in response.content.decode()


def test_the_preview_needs_a_permission_to_add_or_change_schedules(client, django_user_model):
    staff = django_user_model.objects.create_user("clerk", password="pw", is_staff=True)
    client.force_login(staff)

    assert client.get(SCHEDULES + "preview/", {"cron": "* * * * *"}).status_code == 403


def test_editing_the_cron_in_the_form_replaces_the_next_fire(admin_client):
    schedule = make_schedule(name="nightly", cron="0 1 * * *", timezone="Europe/Paris")

    response = admin_client.post(SCHEDULES + f"{schedule.pk}/change/", form_data())

    assert response.status_code == 302
    schedule.refresh_from_db()
    assert schedule.version == 2
    assert [row.due_at for row in pending(schedule)] == [datetime(2026, 11, 23, 2, tzinfo=UTC)]


def test_trigger_and_disable_actions(admin_client):
    schedule = make_schedule(name="report")

    admin_client.post(
        SCHEDULES, {"action": "trigger_now", ACTION_CHECKBOX_NAME: [schedule.pk], "index": 0}
    )
    assert schedule.occurrences.filter(manual=True, status="pending").count() == 1

    admin_client.post(
        SCHEDULES, {"action": "disable", ACTION_CHECKBOX_NAME: [schedule.pk], "index": 0}
    )
    schedule.refresh_from_db()
    assert schedule.enabled is False
    assert schedule.occurrences.filter(manual=False, status="pending").count() == 0


def test_occurrences_list_and_skip(admin_client):
    schedule = make_schedule(name="hourly", cron="0 * * * *")
    [occurrence] = pending(schedule)

    listing = admin_client.get(OCCURRENCES + f"?schedule__id__exact={schedule.pk}")
    assert listing.status_code == 200
    assert f"hourly-{int(occurrence.due_at.timestamp())}" in listing.content.decode()

    admin_client.post(
        OCCURRENCES, {"action": "skip_rows", ACTION_CHECKBOX_NAME: [occurrence.pk], "index": 0}
    )
    occurrence.refresh_from_db()
    assert occurrence.status == "cancelled"
    assert [row.due_at for row in pending(schedule)] == [CURRENT_TIME.replace(hour=14)]


def test_enabling_a_schedule_that_can_no_longer_fire_says_why(admin_client):
    schedule = make_schedule(name="once", cron="@at 2026-11-22T12:30:00Z", enabled=False)

    with time_machine.travel(CURRENT_TIME.replace(hour=13), tick=False):
        response = admin_client.post(
            SCHEDULES,
            {"action": "enable", ACTION_CHECKBOX_NAME: [schedule.pk], "index": 0},
            follow=True,
        )

    assert "never fires" in response.content.decode()
    schedule.refresh_from_db()
    assert schedule.enabled is False
