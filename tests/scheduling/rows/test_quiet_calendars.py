"""A stored calendar as a scheduled model's quiet hours (`quiet_hours = "nights"`): rows held to
the calendar's end, the calendars read once for many rows and again once one is saved, a
missing name named at use and by the check that may read the database, a calendar in use kept,
and the row's admin page saying what held it. The test model is ScheduledPing, given the
declaration for each test."""

import pytest
from django.core import checks
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling.delivery.checks import missing_calendar_warnings
from scheduling.rows.history.record import written_for
from scheduling.rows.models import ScheduledEvent
from scheduling.time.calendars.models import Calendar, forget_named
from tests.factories import PingFactory
from tests.scheduling.rows.test_quiet_hours import HELD, paris
from tests.testapp.models import ScheduledPing

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("frozen_clock")]

Status = ScheduledEvent.Status

NIGHT = paris(2026, 12, 1, 23, 0)
MORNING = paris(2026, 12, 2, 7, 0)


@pytest.fixture
def nights():
    return Calendar.objects.create(
        name="nights", timezone="Europe/Paris", daily_windows=["22:00-07:00"]
    )


@pytest.fixture
def quiet(monkeypatch):
    forget_named()  # a calendar another test's rolled-back transaction stored

    def declare(declared, policy="deliver_at_end"):
        monkeypatch.setattr(ScheduledPing, "quiet_hours", declared)
        monkeypatch.setattr(ScheduledPing, "quiet_policy", policy)
        monkeypatch.setattr(ScheduledPing, "quiet_fold_by", ("ping",))

    yield declare
    forget_named()


def create(ping, *due_times):
    rows = ScheduledPing.objects.bulk_create(
        ScheduledPing(ping=ping, due_at=at) for at in due_times
    )
    return [ScheduledPing.objects.get(pk=row.pk) for row in rows]


def calendar_reads(queries):
    return [q["sql"] for q in queries.captured_queries if "scheduling_calendar" in q["sql"]]


def test_rows_created_at_23_00_are_held_to_the_calendars_end(quiet, nights):
    quiet("nights")
    night, evening = create(PingFactory(), NIGHT, paris(2026, 12, 1, 21, 0))

    assert (night.due_at, night.business_due_at, night.status) == (MORNING, NIGHT, Status.PENDING)
    assert (evening.due_at, evening.business_due_at) == (paris(2026, 12, 1, 21, 0), None)
    [entry] = written_for(ScheduledPing, night.pk).values_list("detail", flat=True)
    assert entry["reason"] == HELD


def test_a_function_of_the_row_may_name_the_calendar(quiet, nights):
    quiet(lambda row: "nights" if row.ping.group == "night-owls" else None)
    [held] = create(PingFactory(group="night-owls"), NIGHT)
    [not_held] = create(PingFactory(group="early-birds"), NIGHT)

    assert (held.due_at, not_held.due_at) == (MORNING, NIGHT)


def test_many_rows_read_the_calendars_once(quiet, nights):
    quiet("nights", policy="skip")
    ping = PingFactory()

    with CaptureQueriesContext(connection) as first:
        ScheduledPing.objects.bulk_create(
            ScheduledPing(ping=ping, due_at=NIGHT) for _ in range(500)
        )
    with CaptureQueriesContext(connection) as later:
        for _ in range(3):
            ScheduledPing(ping=ping, due_at=NIGHT).save()

    assert len(calendar_reads(first)) == 1
    assert calendar_reads(later) == []
    assert ScheduledPing.objects.filter(status=Status.CANCELLED).count() == 503


def test_a_calendar_saved_is_read_again_at_once(quiet, nights):
    quiet("nights")
    create(PingFactory(), NIGHT)
    nights.daily_windows = ["23:30-06:00"]
    nights.save()

    [row] = create(
        PingFactory(),
        NIGHT,
    )
    assert (row.due_at, row.business_due_at) == (NIGHT, None)  # 23:00 is no longer quiet


def test_a_missing_calendar_names_the_model_and_the_name_and_creates_nothing(quiet):
    quiet("no-such-nights")

    with pytest.raises(ImproperlyConfigured) as refused:
        create(PingFactory(), NIGHT)

    message = str(refused.value)
    assert "ScheduledPing.quiet_hours names the calendar 'no-such-nights'" in message
    assert "no calendar is named 'no-such-nights'" in message
    assert not ScheduledPing.objects.exists()


def quiet_calendar_warnings(databases):
    found = checks.run_checks(tags=[checks.Tags.database], databases=databases)
    return [message for message in found if message.id == "scheduling.W004"]


def test_the_database_check_warns_of_a_calendar_not_stored(quiet):
    quiet("nights")

    [warning] = quiet_calendar_warnings(["default"])
    assert warning.obj is ScheduledPing
    assert "testapp.ScheduledPing.quiet_hours names the calendar 'nights'" in warning.msg
    # A check without the database reads nothing (Django 6 hands run_checks(databases=None)
    # every alias, so the check function is asked directly).
    assert missing_calendar_warnings(None) == []

    Calendar.objects.create(name="nights", daily_windows=["22:00-07:00"])
    assert quiet_calendar_warnings(["default"]) == []


def test_a_calendar_named_as_quiet_hours_cannot_be_deleted_or_renamed(quiet, nights):
    quiet("nights")

    with pytest.raises(ValidationError, match=r"in use by model testapp\.ScheduledPing"):
        nights.delete()
    nights.name = "late-nights"
    with pytest.raises(ValidationError, match="cannot be renamed while in use"):
        nights.save()


def test_the_rows_admin_page_says_what_held_it_and_the_next_quiet_spans(
    quiet, nights, admin_client
):
    quiet("nights")
    [row] = create(PingFactory(), NIGHT)

    page = admin_client.get(f"/admin/testapp/scheduledping/{row.pk}/change/")

    content = page.content.decode()
    assert HELD in content  # the timeline's entry
    assert "calendar nights; a row due in a quiet span is held to its end." in content
    # From now (Sunday 2026-11-22, 12:00 UTC), in the calendar's zone.
    assert "Next: Sun 2026-11-22 22:00 CET to Mon 2026-11-23 07:00 CET" in content


def test_a_page_without_quiet_hours_has_no_such_line(admin_client):
    [row] = create(PingFactory(), NIGHT)

    page = admin_client.get(f"/admin/testapp/scheduledping/{row.pk}/change/")

    assert "Quiet hours" not in page.content.decode()
