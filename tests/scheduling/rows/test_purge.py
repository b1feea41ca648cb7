"""Retention: done rows are deleted after their retention, in batches; nothing else ever is."""

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime, timedelta
from io import StringIO
from typing import Any

import psycopg
import pytest
from celery import current_app, signals
from celery.beat import Service
from celery.schedules import crontab
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models.signals import post_delete
from django.test import override_settings

from scheduling.delivery.tasks import purge_task
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.jobs.services import job_put
from scheduling.recurring.chain import _next_successors
from scheduling.recurring.models import RecurringSchedule, ScheduledOccurrence
from scheduling.rows.clock import database_now
from scheduling.rows.history.models import EventHistory, Kind
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.purge import (
    PURGE_TIME_BUDGET,
    purge_all,
    purge_model,
    purge_orphans,
    remember,
    resume_point,
)
from scheduling.rows.registry import beat_schedule
from tests.conftest import CURRENT_TIME
from tests.factories import PingFactory
from tests.scheduling.delivery.test_embedded_mode import embedded_env
from tests.scheduling.delivery.test_embedded_mode import run as run_manage
from tests.scheduling.recurring.conftest import make_schedule
from tests.testapp.models import ScheduledNotice, ScheduledPing
from tests.trainings.factories import PlayerFactory, TrainingFactory
from trainings.kinds import NotificationKind
from trainings.models import PushResult

pytestmark = pytest.mark.django_db

Status = ScheduledEvent.Status
NOW = CURRENT_TIME
DAY = timedelta(days=1)
SECOND = timedelta(seconds=1)
LABEL = "testapp.ScheduledPing"


def make(model: type[Any] = ScheduledPing, status: str = Status.PENDING, **times):
    """A row of `model` in `status`, its timestamps as given (updated_at: NOW unless given)."""
    row = model.objects.create(ping=PingFactory(), due_at=NOW - 60 * DAY, status=status)
    model.objects.filter(pk=row.pk).update(**{"updated_at": NOW, **times})
    return row


@pytest.fixture
def now() -> datetime:
    """The database's clock, for what the command and the task purge by it."""
    return database_now()


def remaining(model: type[ScheduledEvent] = ScheduledPing) -> set[int]:
    return set(model.objects.values_list("pk", flat=True))


def run(*args: str) -> str:
    out = StringIO()
    call_command("scheduling_purge", *args, stdout=out)
    return out.getvalue()


DONE_SINCE = [
    (Status.CANCELLED, "cancelled_at", 7),
    (Status.DELIVERED, "handled_at", 7),
    (Status.FAILED, "updated_at", 30),
    (Status.EXPIRED, "updated_at", 30),
]


@pytest.mark.parametrize(("status", "since", "days"), DONE_SINCE)
def test_a_done_row_is_deleted_once_older_than_its_retention(ping_model, status, since, days):
    cutoff = NOW - days * DAY
    older = make(ping_model, status=status, **{since: cutoff - SECOND})
    at_cutoff = make(ping_model, status=status, **{since: cutoff})
    newer = make(ping_model, status=status, **{since: cutoff + SECOND})

    result = purge_model(ping_model, now=NOW)

    assert result.deleted == 1
    assert older.pk not in remaining(ping_model)
    assert {at_cutoff.pk, newer.pk} <= remaining(ping_model)


@override_settings(SCHEDULING_KEEP_DONE_DAYS=2, SCHEDULING_KEEP_FAILED_DAYS=3)
@pytest.mark.parametrize(("status", "since", "days"), DONE_SINCE)
def test_the_retention_follows_the_settings(ping_model, status, since, days):
    days = {7: 2, 30: 3}[days]
    older = make(ping_model, status=status, **{since: NOW - days * DAY - SECOND})
    newer = make(ping_model, status=status, **{since: NOW - days * DAY + SECOND})

    purge_model(ping_model, now=NOW)

    assert remaining(ping_model) == {newer.pk}
    assert older.pk not in remaining(ping_model)


def test_failed_and_expired_rows_outlive_the_done_retention(ping_model):
    failed = make(ping_model, status=Status.FAILED, updated_at=NOW - 29 * DAY)
    expired = make(ping_model, status=Status.EXPIRED, updated_at=NOW - 29 * DAY)

    purge_model(ping_model, now=NOW)

    assert remaining(ping_model) == {failed.pk, expired.pk}


def test_pending_rows_are_never_deleted_however_old(ping_model):
    ancient = NOW - 3650 * DAY
    pending = make(
        ping_model,
        status=Status.PENDING,
        due_at=ancient,
        created_at=ancient,
        updated_at=ancient,
        delivered_at=ancient,
        handled_at=ancient,
        cancelled_at=ancient,
    )

    assert purge_model(ping_model, now=NOW).deleted == 0
    assert remaining(ping_model) == {pending.pk}


def test_a_delivered_row_awaiting_its_handler_is_never_deleted(ping_model):
    ancient = NOW - 3650 * DAY
    awaiting = make(ping_model, status=Status.DELIVERED, delivered_at=ancient, updated_at=ancient)

    assert purge_model(ping_model, now=NOW).deleted == 0
    assert remaining(ping_model) == {awaiting.pk}


def test_a_model_without_a_handler_is_done_once_delivered():
    older = make(ScheduledNotice, status=Status.DELIVERED, delivered_at=NOW - 7 * DAY - SECOND)
    newer = make(ScheduledNotice, status=Status.DELIVERED, delivered_at=NOW - 7 * DAY + SECOND)

    assert purge_model(ScheduledNotice, now=NOW).deleted == 1
    assert remaining(ScheduledNotice) == {newer.pk}
    assert older.pk not in remaining(ScheduledNotice)


def test_a_cancelled_row_without_cancelled_at_counts_from_its_last_update(ping_model):
    old = make(ping_model, status=Status.CANCELLED, updated_at=NOW - 8 * DAY)
    recent = make(ping_model, status=Status.CANCELLED, updated_at=NOW - 6 * DAY)

    purge_model(ping_model, now=NOW)

    assert remaining(ping_model) == {recent.pk}
    assert old.pk not in remaining(ping_model)


def mixed_rows(model: type[Any], count: int, now: datetime = NOW) -> set[int]:
    """`count` rows cycling through kept and purgeable states; returns the pks to be kept."""
    states: list[tuple[str, dict[str, Any], bool]] = [
        (Status.PENDING, {}, True),
        (Status.DELIVERED, {"handled_at": now - 8 * DAY}, False),
        (Status.DELIVERED, {"delivered_at": now - 8 * DAY}, True),
        (Status.CANCELLED, {"cancelled_at": now - 9 * DAY}, False),
        (Status.FAILED, {"updated_at": now - 10 * DAY}, True),
        (Status.EXPIRED, {"updated_at": now - 31 * DAY}, False),
    ]
    kept = set()
    for n in range(count):
        status, times, keep = states[n % len(states)]
        row = make(model, status=status, **{"updated_at": now, **times})
        if keep:
            kept.add(row.pk)
    return kept


def test_small_batches_walk_the_whole_table_to_the_same_result(ping_model):
    kept = mixed_rows(ping_model, 20)

    with override_settings(SCHEDULING_BATCH_SIZE=3):
        result = purge_model(ping_model, now=NOW)

    assert remaining(ping_model) == kept
    assert (result.deleted, result.examined, result.batches) == (10, 20, 7)


def test_a_purge_out_of_time_stops_between_batches_and_resumes_there(ping_model):
    kept = mixed_rows(ping_model, 12)

    with override_settings(SCHEDULING_BATCH_SIZE=5):
        first = purge_model(ping_model, now=NOW, deadline=0)
        assert first.batches == 1
        assert first.resume_after is not None
        rest = purge_model(ping_model, now=NOW, after=first.resume_after)

    assert rest.resume_after is None
    assert first.deleted + rest.deleted == 6
    assert remaining(ping_model) == kept


def test_the_hourly_task_purges_every_scheduled_model(ping_model, now):
    ping = make(ping_model, status=Status.DELIVERED, handled_at=now - 8 * DAY)
    notice = make(ScheduledNotice, status=Status.DELIVERED, delivered_at=now - 8 * DAY)

    results = purge_task()

    assert {result["model"] for result in results} >= {
        ping_model._meta.label,
        "testapp.ScheduledNotice",
        "purchases.ScheduledPurchase",
        "scheduling_recurring.ScheduledOccurrence",
        "scheduling_jobs.ScheduledJobRun",
        "scheduling_jobs.Job",
    }
    assert ping.pk not in remaining(ping_model)
    assert notice.pk not in remaining(ScheduledNotice)


def test_the_next_run_resumes_where_a_run_out_of_time_stopped(ping_model, now):
    first = make(ping_model, status=Status.CANCELLED, cancelled_at=now - 8 * DAY)
    second = make(ping_model, status=Status.CANCELLED, cancelled_at=now - 8 * DAY)
    remember(ping_model, first.pk)  # as a run out of time leaves it

    purge_all()
    assert remaining(ping_model) == {first.pk}
    assert resume_point(ping_model) is None  # walked to the end: the next run starts over
    purge_all()

    assert remaining(ping_model) == set()
    assert second.pk not in remaining(ping_model)


def test_dry_run_prints_the_counts_per_model_and_deletes_nothing(ping_model, now):
    mixed_rows(ping_model, 12, now)
    make(ScheduledNotice, status=Status.DELIVERED, delivered_at=now - 8 * DAY)
    before = remaining(ping_model)

    output = run("--dry-run")

    assert f"{ping_model._meta.label}: would delete 6\n" in output
    assert "testapp.ScheduledNotice: would delete 1\n" in output
    assert "scheduling_jobs.ScheduledJobRun: would delete 0\n" in output
    assert remaining(ping_model) == before
    assert len(remaining(ScheduledNotice)) == 1


def test_the_command_deletes_and_reports_per_model(ping_model, now):
    kept = mixed_rows(ping_model, 12, now)
    make(ScheduledNotice, status=Status.DELIVERED, delivered_at=now - 8 * DAY)

    output = run()

    assert f"{ping_model._meta.label}: deleted 6 of 12 rows (1 batches)\n" in output
    assert "testapp.ScheduledNotice: deleted 1 of 1 rows (1 batches)\n" in output
    assert remaining(ping_model) == kept


def test_the_model_option_limits_the_purge_to_that_model(ping_model, now):
    make(ping_model, status=Status.CANCELLED, cancelled_at=now - 8 * DAY)
    notice = make(ScheduledNotice, status=Status.DELIVERED, delivered_at=now - 8 * DAY)

    output = run("--model", ping_model._meta.label_lower)

    assert output == f"{ping_model._meta.label}: deleted 1 of 1 rows (1 batches)\n"
    assert remaining(ping_model) == set()
    assert remaining(ScheduledNotice) == {notice.pk}


def test_an_unknown_model_is_refused_naming_the_accepted_labels():
    with pytest.raises(CommandError) as refused:
        run("--model", "nope.Model")

    message = str(refused.value)
    assert message.startswith("'nope.Model' is not a scheduled model; expected one of: ")
    assert "testapp.ScheduledPing" in message
    assert "scheduling_jobs.ScheduledJobRun" in message


def test_beat_runs_the_purge_hourly_on_the_scheduling_queue(tmp_path):
    entry = beat_schedule()["scheduling purge"]
    assert 0 < entry["options"]["expires"] <= 3600

    service = Service(current_app, schedule_filename=str(tmp_path / "beat"))
    try:
        signals.beat_init.send(sender=service)
        purge = service.scheduler.schedule["scheduling purge"]
    finally:
        service.scheduler.close()

    assert purge.task == "scheduling.purge"
    # On the hour by the clock, whenever beat started: a restart does not put it off.
    assert purge.schedule == crontab(minute=0)
    assert PURGE_TIME_BUDGET < 60  # under the health check's default lateness
    assert purge.options["queue"] == "scheduling"


def test_deletion_signals_are_sent_when_someone_listens(ping_model) -> None:
    done = [make(ping_model, status=Status.CANCELLED, cancelled_at=NOW - 8 * DAY) for _ in range(3)]
    kept = make(ping_model, status=Status.CANCELLED, cancelled_at=NOW - 6 * DAY)
    deleted: list[int] = []

    def note(sender: type, instance: ScheduledEvent, **kwargs: Any) -> None:
        deleted.append(instance.pk)

    post_delete.connect(note, sender=ping_model)
    try:
        with override_settings(SCHEDULING_BATCH_SIZE=2):
            result = purge_model(ping_model, now=NOW)
    finally:
        post_delete.disconnect(note, sender=ping_model)

    assert result.deleted == 3
    assert sorted(deleted) == sorted(row.pk for row in done)
    assert remaining(ping_model) == {kept.pk}


# --- history -------------------------------------------------------------------------------


def with_entries(row: ScheduledEvent, count: int = 2) -> ScheduledEvent:
    """`count` history entries for `row`, as its failures and moves write them."""
    kinds = [Kind.HANDLING_FAILED, Kind.RESCHEDULED, Kind.CANCELLED]
    for n in range(count):
        EventHistory.objects.create(
            model=row._meta.label_lower, row_id=row.pk, kind=kinds[n % len(kinds)]
        )
    return row


def entries_of(*rows: ScheduledEvent) -> dict[int, int]:
    """The count of entries per row that still has some."""
    counts: dict[int, int] = {}
    for row in rows:
        count = EventHistory.objects.filter(model=row._meta.label_lower, row_id=row.pk).count()
        if count:
            counts[row.pk] = count
    return counts


@contextmanager
def listening_for_deletes(model: type[Any]) -> Iterator[None]:
    """The ORM's delete: someone listens for the rows' deletion."""

    def note(sender: type, instance: ScheduledEvent, **kwargs: Any) -> None:
        pass

    post_delete.connect(note, sender=model)
    try:
        yield
    finally:
        post_delete.disconnect(note, sender=model)


@pytest.mark.parametrize("deleted_by", ["one statement", "the ORM"])
def test_a_purged_rows_entries_go_with_it_and_a_kept_rows_stay(ping_model, deleted_by):
    purged = [
        with_entries(make(ping_model, status=Status.CANCELLED, cancelled_at=NOW - 8 * DAY)),
        with_entries(make(ping_model, status=Status.FAILED, updated_at=NOW - 31 * DAY), 3),
    ]
    pending = with_entries(make(ping_model, status=Status.PENDING, due_at=NOW - 3650 * DAY))
    recent = with_entries(make(ping_model, status=Status.CANCELLED, cancelled_at=NOW - 6 * DAY), 1)
    with listening_for_deletes(ping_model) if deleted_by == "the ORM" else nullcontext():
        result = purge_model(ping_model, now=NOW)

    assert (result.deleted, result.entries) == (2, 5)
    assert remaining(ping_model) == {pending.pk, recent.pk}
    assert entries_of(*purged, pending, recent) == {pending.pk: 2, recent.pk: 1}


def test_entries_of_another_model_with_the_same_pk_stay(ping_model):
    ping = with_entries(make(ping_model, status=Status.CANCELLED, cancelled_at=NOW - 8 * DAY))
    same_pk = EventHistory.objects.create(
        model="testapp.schedulednotice", row_id=ping.pk, kind=Kind.CANCELLED
    )

    assert purge_model(ping_model, now=NOW).entries == 2
    assert list(EventHistory.objects.values_list("pk", flat=True)) == [same_pk.pk]


def test_the_entries_of_a_row_deleted_by_its_entitys_cascade_go_at_the_next_purge(ping_model, now):
    orphaned = with_entries(make(ping_model, status=Status.PENDING), 3)
    kept = with_entries(make(ping_model, status=Status.PENDING))
    orphaned.ping.delete()  # the domain entity goes, its scheduled row by CASCADE
    assert entries_of(orphaned) == {orphaned.pk: 3}

    results = {result.model: result for result in purge_all()}

    assert results[ping_model._meta.label].entries == 3
    assert entries_of(orphaned, kept) == {kept.pk: 2}


def test_the_walk_of_orphaned_entries_goes_in_batches_and_resumes(ping_model):
    rows = [with_entries(make(ping_model, status=Status.PENDING), 2) for _ in range(4)]
    ping_model.objects.filter(pk__in=[rows[0].pk, rows[2].pk, rows[3].pk]).delete()

    with override_settings(SCHEDULING_BATCH_SIZE=3):
        first = purge_orphans(ping_model, deadline=0)
        rest = purge_orphans(ping_model, after=first.resume_after)

    assert (first.batches, first.entries, first.examined) == (1, 2, 3)
    assert rest.resume_after is None
    assert first.entries + rest.entries == 6
    assert entries_of(*rows) == {rows[1].pk: 2}


def test_the_command_reports_the_history_entries_it_deleted(ping_model):
    with_entries(make(ping_model, status=Status.CANCELLED, cancelled_at=database_now() - 8 * DAY))
    orphaned = with_entries(make(ping_model, status=Status.PENDING), 1)
    orphaned.ping.delete()

    output = run("--model", ping_model._meta.label)

    assert (
        output == f"{ping_model._meta.label}: deleted 1 of 1 rows (1 batches), 3 history entries\n"
    )
    assert not EventHistory.objects.exists()


# --- job runs and occurrences ---------------------------------------------------------------


def make_run(job: Job, status: str, **times) -> ScheduledJobRun:
    run = ScheduledJobRun.objects.create(job=job, due_at=NOW - 60 * DAY, status=status)
    ScheduledJobRun.objects.filter(pk=run.pk).update(**{"updated_at": NOW, **times})
    return run


def test_job_runs_are_done_once_delivered():
    job = Job.objects.create(key="report", callback={"type": "queue", "queue": "reminders"})
    pending = make_run(job, Status.PENDING)
    old = make_run(job, Status.DELIVERED, delivered_at=NOW - 8 * DAY)
    recent = make_run(job, Status.DELIVERED, delivered_at=NOW - 6 * DAY)
    cancelled = make_run(job, Status.CANCELLED, cancelled_at=NOW - 8 * DAY)

    assert purge_model(ScheduledJobRun, now=NOW).deleted == 2
    assert remaining(ScheduledJobRun) == {pending.pk, recent.pk}
    assert {old.pk, cancelled.pk}.isdisjoint(remaining(ScheduledJobRun))
    assert Job.objects.filter(pk=job.pk).exists()


def make_job(key: str, *, days_unchanged: int) -> Job:
    job = Job.objects.create(key=key, callback={"type": "queue", "queue": "reminders"})
    Job.objects.filter(pk=job.pk).update(updated_at=NOW - days_unchanged * DAY)
    return job


def test_a_job_goes_once_its_runs_are_purged_and_it_is_left_alone():
    done = make_job("done", days_unchanged=8)
    make_run(done, Status.DELIVERED, delivered_at=NOW - 8 * DAY)
    waiting = make_job("waiting", days_unchanged=8)
    make_run(waiting, Status.PENDING)
    recent_run = make_job("recent-run", days_unchanged=8)
    make_run(recent_run, Status.DELIVERED, delivered_at=NOW - 6 * DAY)
    make_job("recently-written", days_unchanged=6)  # e.g. PUT with no instants
    make_job("never-run", days_unchanged=8)

    purge_model(ScheduledJobRun, now=NOW)
    result = purge_model(Job, now=NOW)

    assert result.deleted == 2
    assert set(Job.objects.values_list("key", flat=True)) == {
        "waiting",
        "recent-run",
        "recently-written",
    }


def test_a_put_after_the_job_was_purged_creates_it_anew(settings):
    settings.SCHEDULING_JOB_MAX_PAST = 365 * 86400  # NOW is a fixed day, maybe long past
    make_job("weekly", days_unchanged=8)
    purge_model(Job, now=NOW)

    _, created = job_put(
        key="weekly",
        schedules=[NOW + DAY],
        callback={"type": "queue", "queue": "reminders"},
    )

    assert created
    assert Job.objects.get(key="weekly").runs.pending().count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_job_a_writer_holds_is_skipped_without_waiting() -> None:
    held = make_job("held", days_unchanged=30)
    make_job("free", days_unchanged=30)
    with other_connection() as other:
        other.execute("SELECT 1 FROM scheduling_job WHERE id = %s FOR UPDATE", [held.pk])
        assert in_a_thread(lambda: purge_model(Job, now=NOW).deleted) == 1

    assert set(Job.objects.values_list("key", flat=True)) == {"held"}


def test_push_results_go_after_the_done_retention():
    training = TrainingFactory()
    player = PlayerFactory(team=training.team)
    results = {
        days: PushResult.objects.create(
            event_id=f"trainings.scheduledtrainingnotification:{days}:v1",
            training=training,
            player=player,
            kind=NotificationKind.INVITATION,
            status=PushResult.Status.SENT,
        )
        for days in (8, 6)
    }
    for days, result in results.items():
        PushResult.objects.filter(pk=result.pk).update(updated_at=NOW - days * DAY)

    assert purge_model(PushResult, now=NOW).deleted == 1
    assert list(PushResult.objects.values_list("pk", flat=True)) == [results[6].pk]
    assert "trainings.PushResult" in {result["model"] for result in purge_task()}


def make_occurrence(schedule, status: str, due_at, **fields) -> ScheduledOccurrence:
    fields.setdefault("schedule_version", schedule.version)
    occurrence = ScheduledOccurrence.objects.create(
        schedule=schedule, due_at=due_at, status=status, **fields
    )
    stamp = {"delivered_at": due_at, "handled_at": None, "cancelled_at": due_at}
    ScheduledOccurrence.objects.filter(pk=occurrence.pk).update(updated_at=due_at, **stamp)
    return occurrence


def test_a_schedule_keeps_the_occurrence_its_timeline_goes_on_from():
    # Made fire_all after its creation, so its past starts_at does not backfill a day of fires;
    # its catch-up window reaches back past `latest`, so the timeline goes on from there.
    schedule = make_schedule(cron="0 * * * *", starts_at=NOW - 30 * DAY)
    RecurringSchedule.objects.filter(pk=schedule.pk).update(
        misfire_policy="fire_all", catchup_window=30 * DAY
    )
    schedule.refresh_from_db()
    [next_fire] = schedule.occurrences.filter(status=Status.PENDING)
    hours = [NOW - 20 * DAY + n * timedelta(hours=1) for n in range(3)]
    make_occurrence(schedule, Status.DELIVERED, hours[0])
    make_occurrence(schedule, Status.CANCELLED, hours[1])
    latest = make_occurrence(schedule, Status.DELIVERED, hours[2])
    manual = make_occurrence(schedule, Status.DELIVERED, hours[2] + SECOND, manual=True)
    stale = make_occurrence(schedule, Status.DELIVERED, hours[2] + DAY, schedule_version=0)

    assert purge_model(ScheduledOccurrence, now=NOW).deleted == 4

    assert remaining(ScheduledOccurrence) == {next_fire.pk, latest.pk}
    assert {manual.pk, stale.pk}.isdisjoint(remaining(ScheduledOccurrence))
    # With its pending occurrence gone, the schedule would go on from the fire after `latest`.
    next_fire.delete()
    following = _next_successors(schedule, NOW)
    assert following[0].due_at == hours[2] + timedelta(hours=1)


def test_the_kept_occurrence_moves_on_with_the_next_fire():
    schedule = make_schedule(cron="0 * * * *")
    first = make_occurrence(schedule, Status.DELIVERED, NOW - 40 * DAY)
    assert purge_model(ScheduledOccurrence, now=NOW).deleted == 0

    make_occurrence(schedule, Status.EXPIRED, NOW - 35 * DAY)
    make_occurrence(schedule, Status.DELIVERED, NOW - 10 * DAY)

    assert purge_model(ScheduledOccurrence, now=NOW).deleted == 2
    assert first.pk not in remaining(ScheduledOccurrence)
    assert len(remaining(ScheduledOccurrence)) == 2  # the latest fire and the pending one


# --- concurrency ----------------------------------------------------------------------------


@contextmanager
def other_connection() -> Iterator[psycopg.Connection]:
    """A second session, as another writer's; its transaction is rolled back at the end."""
    db = connection.settings_dict
    other = psycopg.connect(
        host=db["HOST"], port=db["PORT"] or 5432, user=db["USER"], dbname=db["NAME"]
    )
    try:
        yield other
    finally:
        other.rollback()
        other.close()


def in_a_thread(purge: Callable[[], int]) -> int:
    """`purge()` on a connection of its own; fails if it waits on a lock."""
    finished = threading.Event()
    result: list[int] = []

    def run() -> None:
        result.append(purge())
        connection.close()
        finished.set()

    threading.Thread(target=run).start()
    assert finished.wait(10), "the purge waited for the row lock"
    return result[0]


@pytest.mark.django_db(transaction=True)
def test_a_row_another_transaction_holds_is_skipped_without_waiting(ping_model) -> None:
    held = make(ping_model, status=Status.CANCELLED, cancelled_at=NOW - 30 * DAY)
    free = make(ping_model, status=Status.CANCELLED, cancelled_at=NOW - 30 * DAY)
    with other_connection() as other:
        other.execute(
            f"SELECT 1 FROM {ping_model._meta.db_table} WHERE id = %s FOR UPDATE", [held.pk]
        )
        assert in_a_thread(lambda: purge_model(ping_model, now=NOW).deleted) == 1

    assert remaining(ping_model) == {held.pk}
    assert free.pk not in remaining(ping_model)


# --- the embedded mode ----------------------------------------------------------------------

MAKE_EMBEDDED_ROWS = """
from datetime import timedelta
from django.utils import timezone
from scheduling.rows.history.models import EventHistory
from tests.testapp.models import Ping, ScheduledPing
old = timezone.now() - timedelta(days=40)
for status in ("pending", "delivered", "cancelled", "failed"):
    row = ScheduledPing.objects.create(ping=Ping.objects.create(name=status), due_at=old, status=status)
    ScheduledPing.objects.filter(pk=row.pk).update(updated_at=old, handled_at=old, cancelled_at=old)
    EventHistory.objects.create(model="testapp.scheduledping", row_id=row.pk, kind="rescheduled")
EventHistory.objects.create(model="testapp.scheduledping", row_id=10**9, kind="cancelled")
"""
COUNT_EMBEDDED_ENTRIES = """
from scheduling.rows.history.models import EventHistory
print(list(EventHistory.objects.values_list("row_id", flat=True)))
"""


@pytest.mark.slow
def test_the_embedded_mode_purges_on_sqlite(tmp_path):
    env = embedded_env(tmp_path, SCHEDULING_BATCH_SIZE="2")

    def manage(*args: str) -> str:
        return run_manage(env, *args)

    manage("migrate", "-v", "0")
    manage("shell", "-v", "0", "-c", MAKE_EMBEDDED_ROWS)

    assert "would delete 3" in manage("scheduling_purge", "--dry-run", "--model", LABEL)
    purged = manage("scheduling_purge", "--model", LABEL)
    assert "deleted 3 of 4 rows (2 batches), 4 history entries" in purged  # and an orphan's
    assert "would delete 0" in manage("scheduling_purge", "--dry-run", "--model", LABEL)
    assert manage("shell", "-v", "0", "-c", COUNT_EMBEDDED_ENTRIES).strip() == "[1]"
