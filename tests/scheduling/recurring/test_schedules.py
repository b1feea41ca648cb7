"""Materialisation, delivery, misfire policies and versioning, on real PostgreSQL and Redis."""

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
import time_machine
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.core.management import call_command
from django.db import IntegrityError, transaction
from django.db.models import F
from django.test import override_settings

from scheduling.recurring.conf import recurring_settings
from scheduling.recurring.models import RecurringSchedule, ScheduledOccurrence
from scheduling.recurring.services import (
    occurrence_skip,
    schedule_preview,
    schedule_set_enabled,
    schedule_trigger,
)
from tests.conftest import CURRENT_TIME, queued_messages
from tests.scheduling.recurring.conftest import (
    celery_body,
    json_bodies,
    make_schedule,
    pending,
    sweep_at,
    sweep_until_idle,
)

pytestmark = pytest.mark.django_db

MINUTE = timedelta(minutes=1)
Status = ScheduledOccurrence.Status


def at(hour: int, minute: int, second: int = 0) -> datetime:
    return CURRENT_TIME.replace(hour=hour, minute=minute, second=second)


def fired(broker, queue="reports") -> list[str]:
    return [body["scheduled_for"] for body in json_bodies(broker, queue)]


# --- materialisation -----------------------------------------------------------------------


def test_a_new_schedule_has_exactly_one_pending_occurrence_at_its_next_fire_time():
    schedule = make_schedule(cron="*/5 * * * *")

    [occurrence] = pending(schedule)
    assert occurrence.due_at == at(12, 5)
    assert occurrence.schedule_version == schedule.version == 1


def test_the_database_refuses_a_second_pending_occurrence():
    schedule = make_schedule()

    with pytest.raises(IntegrityError), transaction.atomic():
        ScheduledOccurrence.objects.create(schedule=schedule, schedule_version=1, due_at=at(13, 0))


def test_the_first_fire_is_the_first_at_or_after_starts_at():
    starts = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    schedule = make_schedule(cron="0 8 * * *", starts_at=starts)

    assert pending(schedule)[0].due_at == starts


def test_a_fire_once_schedule_starting_in_the_past_starts_from_now_without_backfilling():
    schedule = make_schedule(cron="0 * * * *", starts_at=CURRENT_TIME - timedelta(days=3))

    assert pending(schedule)[0].due_at == at(13, 0)


def test_delivering_inserts_the_next_occurrence_in_the_same_sweep(broker):
    schedule = make_schedule()

    assert sweep_at(at(12, 1)).delivered == 1

    assert fired(broker) == ["2026-11-22T12:01:00Z"]
    assert [row.due_at for row in pending(schedule)] == [at(12, 2)]
    schedule.refresh_from_db()
    assert schedule.last_fired_at == at(12, 1)


def test_a_late_sweep_does_not_drift_the_timeline(broker):
    schedule = make_schedule(cron="*/10 * * * *")

    sweep_at(at(12, 10, 9))  # 9 s late: within the grace, not a misfire

    assert [row.due_at for row in pending(schedule)] == [at(12, 20)]


def test_nothing_is_published_early(broker):
    make_schedule()

    assert sweep_at(at(12, 0, 59)).delivered == 0
    assert broker.llen("reports") == 0


def test_no_occurrence_after_ends_at(broker):
    schedule = make_schedule(cron="*/20 * * * *", ends_at=at(12, 40))

    sweep_at(at(12, 20))
    sweep_at(at(12, 40))

    assert fired(broker) == ["2026-11-22T12:20:00Z", "2026-11-22T12:40:00Z"]
    assert pending(schedule) == []


def test_an_at_schedule_fires_once(broker):
    schedule = make_schedule(cron="@at 2026-11-22T12:30:00Z")

    sweep_at(at(12, 30))
    sweep_at(at(13, 30))

    assert fired(broker) == ["2026-11-22T12:30:00Z"]
    assert pending(schedule) == []


def test_every_is_anchored_at_starts_at(broker):
    schedule = make_schedule(cron="@every 90m", starts_at=at(12, 10))

    assert [row.due_at for row in pending(schedule)] == [at(12, 10)]
    sweep_at(at(12, 10))
    assert [row.due_at for row in pending(schedule)] == [at(13, 40)]


# --- messages ------------------------------------------------------------------------------


def test_a_queue_target_gets_plain_json_with_a_stable_id(broker):
    make_schedule(name="export", payload_template={"day": "${todaysDate}", "n": 3})

    sweep_at(at(12, 1, 2))

    [body] = json_bodies(broker, "reports")
    assert body == {
        "id": f"export-{int(at(12, 1).timestamp())}",
        "schedule": "export",
        "scheduled_for": "2026-11-22T12:01:00Z",
        "published_at": "2026-11-22T12:01:02Z",
        "manual": False,
        "payload": {"day": "2026-11-22", "n": 3},
    }


def test_a_task_target_gets_a_celery_task_message_with_the_rendered_payload(broker):
    schedule = make_schedule(
        name="report", queue="", task="reports.build", payload_template={"for": "${scheduleName}"}
    )
    occurrence = pending(schedule)[0]

    sweep_at(at(12, 1))

    [message] = queued_messages(broker, "celery")
    assert message["headers"]["task"] == "reports.build"
    assert message["headers"]["id"] == occurrence.event_id
    _args, kwargs, _embed = celery_body(message)
    event = kwargs["event"]
    assert event["id"] == occurrence.event_id
    assert event["model"] == "scheduling_recurring.scheduledoccurrence"
    assert event["data"]["id"] == f"report-{int(at(12, 1).timestamp())}"
    assert event["data"]["payload"] == {"for": "report"}


def test_trigger_fires_once_now_outside_the_timeline(broker):
    schedule = make_schedule(name="export", cron="0 0 * * *")

    with time_machine.travel(at(12, 0, 30), tick=False):
        manual = schedule_trigger(schedule=schedule)
    sweep_at(at(12, 0, 31))

    [body] = json_bodies(broker, "reports")
    assert body["id"] == f"export-manual-{manual.pk}"
    assert body["manual"] is True
    assert [row.due_at for row in pending(schedule)] == [datetime(2026, 11, 23, tzinfo=UTC)]
    schedule.refresh_from_db()
    assert schedule.last_fired_at is None


# --- misfires after downtime ---------------------------------------------------------------


DOWNTIME_END = at(13, 0, 30)  # every minute from 12:01 to 13:00 was missed


def test_fire_all_publishes_every_missed_fire_time_each_its_own_occurrence(broker):
    schedule = make_schedule(misfire_policy="fire_all")

    assert sweep_until_idle(DOWNTIME_END) == 60

    expected = [(at(12, 1) + i * MINUTE).isoformat().replace("+00:00", "Z") for i in range(60)]
    assert fired(broker) == expected
    assert len({body["id"] for body in json_bodies(broker, "reports")}) == 60
    assert [row.due_at for row in pending(schedule)] == [at(13, 1)]


def test_fire_all_publishes_only_what_its_catchup_window_covers_and_moves_on(broker):
    schedule = make_schedule(misfire_policy="fire_all", catchup_window=timedelta(minutes=5))

    sweep_until_idle(DOWNTIME_END)

    # 12:55:30 is the window's start: older fire times are skipped, the first one expired.
    assert fired(broker) == [f"2026-11-22T12:{m}:00Z" for m in range(56, 60)] + [
        "2026-11-22T13:00:00Z"
    ]
    assert schedule.occurrences.get(due_at=at(12, 1)).status == Status.EXPIRED
    assert [row.due_at for row in pending(schedule)] == [at(13, 1)]


def test_fire_once_publishes_one_and_moves_on(broker):
    schedule = make_schedule(misfire_policy="fire_once")

    sweep_until_idle(DOWNTIME_END)

    assert fired(broker) == ["2026-11-22T12:01:00Z"]
    assert [row.due_at for row in pending(schedule)] == [at(13, 1)]


def test_skip_publishes_none_of_the_missed_ones(broker):
    schedule = make_schedule(misfire_policy="skip")

    sweep_until_idle(DOWNTIME_END)

    assert broker.llen("reports") == 0
    assert schedule.occurrences.get(due_at=at(12, 1)).status == Status.EXPIRED
    assert [row.due_at for row in pending(schedule)] == [at(13, 1)]
    sweep_at(at(13, 1))
    assert fired(broker) == ["2026-11-22T13:01:00Z"]


def test_max_lateness_expires_an_occurrence_and_skips_what_would_expire_too(broker):
    schedule = make_schedule(misfire_policy="fire_all", max_lateness=timedelta(minutes=5))

    sweep_until_idle(DOWNTIME_END)

    # 12:56 and later were less than 5 minutes late at 13:00:30.
    assert fired(broker) == [f"2026-11-22T12:{m}:00Z" for m in range(56, 60)] + [
        "2026-11-22T13:00:00Z"
    ]
    assert schedule.occurrences.get(due_at=at(12, 1)).status == Status.EXPIRED


# --- edits and versions --------------------------------------------------------------------


def test_editing_the_cron_bumps_the_version_and_replaces_the_pending_occurrence():
    schedule = make_schedule(cron="0 * * * *")
    old = pending(schedule)[0]

    with time_machine.travel(at(12, 10), tick=False):
        schedule.cron = "30 * * * *"
        schedule.save()

    assert schedule.version == 2
    old.refresh_from_db()
    assert old.status == Status.CANCELLED
    [new] = pending(schedule)
    assert (new.due_at, new.schedule_version) == (at(12, 30), 2)


@pytest.mark.parametrize(
    ("field", "value"),
    [("timezone", "Europe/Paris"), ("task", "reports.build"), ("queue", "other")],
)
def test_editing_the_time_zone_or_target_bumps_the_version(field, value):
    schedule = make_schedule(cron="0 * * * *")
    if field == "task":
        schedule.queue = ""
    setattr(schedule, field, value)

    with time_machine.travel(at(12, 10), tick=False):
        schedule.save()

    assert schedule.version == 2
    assert [row.schedule_version for row in pending(schedule)] == [2]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("payload_template", {"a": "${todaysDate}"}),
        ("template_timezone", "America/Los_Angeles"),
        ("misfire_policy", "fire_all"),
        ("catchup_window", timedelta(hours=1)),
        ("max_lateness", timedelta(minutes=5)),
        ("name", "renamed"),
    ],
)
def test_any_other_edit_bumps_the_version_and_replaces_the_occurrence_at_the_same_time(
    field, value
):
    schedule = make_schedule()
    [before] = pending(schedule)

    setattr(schedule, field, value)
    with time_machine.travel(at(12, 0, 30), tick=False):
        schedule.save()

    assert schedule.version == 2
    before.refresh_from_db()
    assert before.status == Status.CANCELLED
    [after] = pending(schedule)
    assert (after.due_at, after.schedule_version) == (before.due_at, 2)


def test_a_save_naming_its_update_fields_bumps_the_version_too():
    schedule = make_schedule()

    schedule.payload_template = {"a": 1}
    schedule.save(update_fields=["payload_template"])

    schedule.refresh_from_db()
    assert (schedule.version, schedule.payload_template) == (2, {"a": 1})
    assert [row.schedule_version for row in pending(schedule)] == [2]


def test_a_payload_edited_in_place_counts_as_a_change():
    schedule = make_schedule(payload_template={"a": {"b": 1}})

    schedule.payload_template["a"]["b"] = 2
    schedule.save()

    assert schedule.version == 2


def test_saving_without_a_change_keeps_the_version_and_the_occurrence():
    schedule = make_schedule()
    before = pending(schedule)

    RecurringSchedule.objects.get(pk=schedule.pk).save()

    schedule.refresh_from_db()
    assert schedule.version == 1
    assert pending(schedule) == before


def test_disabling_cancels_the_pending_occurrence_and_enabling_materialises_the_next(broker):
    schedule = make_schedule()

    schedule.enabled = False
    schedule.save()
    assert pending(schedule) == []
    assert sweep_at(at(12, 5)).delivered == 0

    with time_machine.travel(at(12, 30, 10), tick=False):
        schedule.enabled = True
        schedule.save()
    assert [row.due_at for row in pending(schedule)] == [at(12, 31)]


def test_deleting_a_schedule_removes_its_occurrences():
    schedule = make_schedule()
    schedule.delete()

    assert ScheduledOccurrence.objects.count() == 0


def test_a_stale_occurrence_is_never_published(broker):
    schedule = make_schedule()
    # A bulk update bypasses save(): the pending row is left behind with the old version.
    RecurringSchedule.objects.filter(pk=schedule.pk).update(version=F("version") + 1)
    stale = pending(schedule)[0]

    sweep_at(at(12, 1))

    assert broker.llen("reports") == 0
    stale.refresh_from_db()
    assert stale.status == Status.CANCELLED
    assert stale.cancel_reason == "stale schedule version"


def test_saving_repairs_a_schedule_left_without_its_occurrence_after_the_cancelled_one():
    schedule = make_schedule()
    ScheduledOccurrence.objects.filter(schedule=schedule).cancel("by hand")

    with time_machine.travel(at(12, 0, 30), tick=False):
        schedule.save()

    assert [row.due_at for row in pending(schedule)] == [at(12, 2)]


def test_an_occurrence_that_fails_still_gives_its_schedule_the_next_one(broker, monkeypatch):
    broken, healthy = make_schedule(), make_schedule()
    publishable = ScheduledOccurrence.to_message

    def to_message(self, published_at):
        if self.schedule_id == broken.pk:
            raise TypeError("cannot serialise")
        return publishable(self, published_at)

    monkeypatch.setattr(ScheduledOccurrence, "to_message", to_message)
    with override_settings(SCHEDULING_MAX_ATTEMPTS=1):
        result = sweep_at(at(12, 1))

    assert (result.delivered, result.failed) == (1, 1)
    assert broken.occurrences.get(due_at=at(12, 1)).status == Status.FAILED
    assert [row.due_at for row in pending(broken)] == [at(12, 2)]
    assert [row.due_at for row in pending(healthy)] == [at(12, 2)]


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"queue": "scheduling"}, "queue", "carries Celery task messages"),
        ({"queue": "celery"}, "queue", "reserved"),
        ({"queue": "amq.reports"}, "queue", "reserved"),
        ({"queue": "two words"}, "queue", "letters, digits"),
        ({"task": "not a task!"}, "task", "dotted Celery task name"),
        ({"task": "celery.backend_cleanup"}, "task", "is internal"),
    ],
)
def test_a_target_is_checked_as_a_keyed_job_callback_is(fields, field, message):
    with pytest.raises(ValidationError) as refused:
        make_schedule(**{"queue": "", **fields})

    assert message in " ".join(refused.value.message_dict[field])


def test_a_stored_target_refused_by_later_rules_can_still_be_edited_and_disabled():
    schedule = make_schedule(queue="reports")
    RecurringSchedule.objects.filter(pk=schedule.pk).update(queue="celery")  # an older row
    stored = RecurringSchedule.objects.get(pk=schedule.pk)

    stored.payload_template = {"edited": True}
    stored.save()
    assert schedule_set_enabled(schedule=stored, enabled=False) is True

    stored.queue = "amq.other"
    with pytest.raises(ValidationError) as refused:
        stored.save()
    assert "reserved" in " ".join(refused.value.message_dict["queue"])


def test_skipping_an_occurrence_materialises_the_one_after():
    schedule = make_schedule(cron="0 * * * *")

    assert occurrence_skip(occurrence=pending(schedule)[0]) is True

    assert [row.due_at for row in pending(schedule)] == [at(14, 0)]


def test_preview_lists_the_next_fire_times_in_order():
    schedule = make_schedule(cron="0 9 * * MON-FRI", timezone="Europe/Paris")

    times = schedule_preview(schedule=schedule, count=3, after=CURRENT_TIME)

    assert times == [
        datetime(2026, 11, 23, 8, tzinfo=UTC),
        datetime(2026, 11, 24, 8, tzinfo=UTC),
        datetime(2026, 11, 25, 8, tzinfo=UTC),
    ]


# --- validation on save --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"cron": "61 * * * *"}, "cron", 'minute field "61" is not valid'),
        ({"timezone": "Mars/Olympus"}, "timezone", "not a known IANA time zone"),
        ({"payload_template": {"a": "${tomorrow}"}}, "payload_template", "${tomorrow}"),
        ({"task": "x.y"}, "task", "exactly one target"),
        ({"queue": ""}, "queue", "exactly one target"),
        ({"ends_at": CURRENT_TIME}, "ends_at", "must be after starts_at"),
        ({"cron": "@at 2020-01-01T00:00:00Z"}, "cron", "never fires"),
        ({"name": "not a slug"}, "name", "slug"),
        ({"max_lateness": timedelta(0)}, "max_lateness", "positive duration"),
        ({"template_timezone": "Seattle"}, "template_timezone", "not a known IANA time zone"),
        ({"catchup_window": timedelta(0)}, "catchup_window", "positive duration of at most"),
        ({"catchup_window": timedelta(days=400)}, "catchup_window", "366 days, e.g. P1D"),
        ({"starts_at": datetime(9500, 1, 1, tzinfo=UTC)}, "starts_at", "out of range"),
    ],
)
def test_orm_saves_refuse_bad_schedules_naming_the_field(fields, field, message):
    with pytest.raises(ValidationError) as error:
        make_schedule(**fields)

    assert message in " ".join(error.value.message_dict[field])
    assert RecurringSchedule.objects.count() == 0


# --- repair and settings -------------------------------------------------------------------


def test_repair_gives_a_schedule_whose_occurrence_failed_its_next_one():
    schedule = make_schedule(cron="*/5 * * * *")
    ScheduledOccurrence.objects.filter(schedule=schedule).update(status=Status.FAILED)
    make_schedule(name="healthy")
    make_schedule(name="off", enabled=False)

    out = StringIO()
    with time_machine.travel(at(12, 5, 1), tick=False):
        call_command("recurring_repair", stdout=out)

    assert out.getvalue().strip() == "repaired=1"
    assert [row.due_at for row in pending(schedule)] == [at(12, 10)]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SCHEDULING_RECURRING_MISFIRE_GRACE", -1),
        ("SCHEDULING_RECURRING_MISFIRE_GRACE", True),
        ("SCHEDULING_RECURRING_MISFIRE_GRACE", float("nan")),
    ],
)
def test_bad_recurring_settings_are_refused_by_name(settings, name, value):
    setattr(settings, name, value)

    with pytest.raises(ImproperlyConfigured, match=name):
        recurring_settings()
