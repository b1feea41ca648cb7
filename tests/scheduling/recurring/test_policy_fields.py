"""The policy fields through REST and the admin: every one round-trips, bad values answer 400
(a form error in the admin) naming the field and the accepted values, and the DST outlook."""

import pytest
from django.contrib.auth.models import User

from scheduling.recurring.models import RecurringSchedule
from tests.conftest import users_of
from tests.scheduling.recurring.conftest import make_schedule
from tests.scheduling.recurring.test_schedule_admin import SCHEDULES, form_data

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("frozen_clock")]

URL = "/api/schedules/"
POLICIES = {
    "overlap_policy": "buffer_one",
    "dst_gap_policy": "skip",
    "dst_repeat_policy": "twice",
    "max_fires": 12,
    "resume_policy": "catch_up",
}
VALID = {
    "name": "weekly-report",
    "cron": "30 1 * * *",
    "timezone": "America/New_York",
    "task": "reports.build",
}

user_with = users_of("scheduling_recurring")


@pytest.fixture(autouse=True)
def reports_workers(settings):
    settings.SCHEDULING_EXTERNAL_TASKS = ["reports.*"]  # another codebase's workers run it


@pytest.fixture
def api_user() -> User:
    actions = ("view", "add", "change", "delete")
    return user_with("operator", *(f"{action}_recurringschedule" for action in actions))


def test_every_policy_field_round_trips_through_the_api(api):
    created = api.post(URL, {**VALID, **POLICIES}, format="json")

    assert created.status_code == 201, created.content
    body = api.get(URL + "weekly-report/").json()
    assert {name: body[name] for name in POLICIES} == POLICIES
    assert (body["fire_count"], body["finished"], body["paused_at"]) == (0, False, None)

    changed = api.patch(
        URL + "weekly-report/",
        {"enabled": False, "paused_note": "quarter close", "max_fires": None},
        format="json",
    )

    assert changed.status_code == 200, changed.content
    body = api.get(URL + "weekly-report/").json()
    assert body["paused_note"] == "quarter close"
    assert body["paused_by"] == "api:operator"
    assert body["paused_at"] == "2026-11-22T12:00:00Z"
    assert body["max_fires"] is None


@pytest.mark.parametrize(
    ("field", "value", "accepted"),
    [
        ("overlap_policy", "queue", "allow, skip, buffer_one"),
        ("dst_gap_policy", "later", "shift, skip"),
        ("dst_repeat_policy", "both", "auto, once, twice"),
        ("resume_policy", "replay", "skip, catch_up"),
        ("max_fires", 0, "from 1 to 2,147,483,647"),
        ("max_fires", "many", "from 1 to 2,147,483,647"),
    ],
)
def test_a_bad_policy_value_answers_400_naming_the_field_and_the_accepted_values(
    api, field, value, accepted
):
    response = api.post(URL, {**VALID, field: value}, format="json")

    assert response.status_code == 400
    assert accepted in " ".join(response.json()[field])
    assert not RecurringSchedule.objects.exists()


def test_an_overlap_policy_with_a_queue_target_answers_400_saying_why(api):
    body = {**VALID, "task": "", "queue": "reports", "overlap_policy": "skip"}
    response = api.post(URL, body, format="json")

    assert response.status_code == 400
    assert "needs a task target" in " ".join(response.json()["overlap_policy"])


def test_a_finished_schedule_reads_finished(api):
    schedule = make_schedule(name="counted", max_fires=2)
    RecurringSchedule.objects.filter(pk=schedule.pk).update(fire_count=2)

    assert api.get(URL + "counted/").json()["finished"] is True


def test_the_dst_outlook_shows_what_the_next_changes_do(api):
    make_schedule(name="night", cron="30 1 * * *", timezone="America/New_York")

    [spring, autumn] = api.get(URL + "night/dst/").json()

    assert spring["at"] == "2027-03-14T07:00:00Z"
    assert spring["policy"].startswith("dst_gap_policy shift")
    assert autumn["at"] == "2027-11-07T06:00:00Z"
    assert autumn["policy"].startswith("dst_repeat_policy auto (once, fixed-time)")
    assert autumn["fire_times"] == ["2027-11-07T05:30:00Z"]


# --- admin ------------------------------------------------------------------------------------


ADMIN_POLICIES = {**{k: str(v) for k, v in POLICIES.items()}, "paused_note": ""}


def test_every_policy_field_round_trips_through_the_admin(admin_client):
    fields = {**ADMIN_POLICIES, "queue": "", "task": "reports.build"}
    response = admin_client.post(SCHEDULES + "add/", form_data(**fields))

    assert response.status_code == 302, response.content.decode()[:2000]
    schedule = RecurringSchedule.objects.get(name="nightly")
    assert {name: getattr(schedule, name) for name in POLICIES} == POLICIES
    page = admin_client.get(f"{SCHEDULES}{schedule.pk}/change/").content.decode()
    for value in ("buffer_one", "catch_up", 'value="12"'):
        assert value in page
    response = admin_client.post(
        f"{SCHEDULES}{schedule.pk}/change/",
        form_data(**{**fields, "enabled": "", "paused_note": "supplier migration"}),
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    schedule.refresh_from_db()
    assert (schedule.paused_note, schedule.paused_by) == ("supplier migration", "admin:admin")
    assert "paused: supplier migration" in admin_client.get(SCHEDULES).content.decode()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"overlap_policy": "queue"}, "Select a valid choice"),
        ({"max_fires": "0"}, "max_fires must be a whole number from 1 to 2,147,483,647"),
        ({"overlap_policy": "skip"}, "overlap_policy &#x27;skip&#x27; needs a task target"),
    ],
)
def test_the_admin_form_refuses_a_bad_policy_naming_it(admin_client, fields, message):
    response = admin_client.post(SCHEDULES + "add/", form_data(**fields))

    assert response.status_code == 200
    assert message in response.content.decode()
    assert not RecurringSchedule.objects.exists()


def test_the_admin_shows_what_the_schedule_does_at_the_next_dst_changes(admin_client):
    schedule = make_schedule(name="night", cron="30 2 * * *", timezone="America/New_York")

    page = admin_client.get(f"{SCHEDULES}{schedule.pk}/change/").content.decode()

    assert "2027-03-14: clocks go forward 1:00:00 at 02:00 EST, to 03:00 EDT" in page
    assert "dst_gap_policy shift: a skipped wall time: fire at the jump" in page
    assert "03:00:00 EDT" in page
