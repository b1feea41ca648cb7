"""A domain on a database of its own: tests.remoteapp lives on "second" (SCHEDULING_DATABASES),
tests.testapp on "default". The framework sweeps, handles, reconciles, purges and shows each
model on its own database, and writes each row's history there, in the row's transaction."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connections
from django.utils import timezone

from scheduling.delivery.handling.batches import handle_batch
from scheduling.delivery.handling.once import handle_once
from scheduling.delivery.sweep.run import slot_lock, sweep
from scheduling.delivery.testing import run_due
from scheduling.rows.databases import database_of
from scheduling.rows.history.models import EventHistory, Kind
from scheduling.rows.purge import purge_model
from scheduling.rows.states import Status
from tests.conftest import queued_task_ids
from tests.factories import ScheduledPingFactory
from tests.ops.helpers import TOKEN, scrape, value
from tests.remoteapp.models import Account, ReminderSent, ScheduledReminder
from tests.testapp.models import PingEffect, ScheduledPing

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

REMOTE = "remoteapp.scheduledreminder"
REMOTE_LABEL = "remoteapp.ScheduledReminder"
URL = "/api/events/remoteapp/scheduledreminder/"


def reminder(name: str = "ada", *, ago: timedelta = timedelta(minutes=1)) -> ScheduledReminder:
    """A reminder scheduled an hour ahead of its due time (so it is late from its due time, not
    from its creation)."""
    account = Account.objects.create(name=name)
    row = ScheduledReminder.objects.create(account=account, due_at=timezone.now() - ago)
    ScheduledReminder.objects.filter(pk=row.pk).update(created_at=row.due_at - timedelta(hours=1))
    return row


def history_on(alias: str, row: ScheduledReminder) -> list[str]:
    entries = EventHistory.objects.using(alias).filter(model=REMOTE, row_id=row.pk)
    return list(entries.order_by("at", "pk").values_list("kind", flat=True))


def tables_on(alias: str) -> set[str]:
    return set(connections[alias].introspection.table_names())


def delivered(row: ScheduledReminder) -> dict:
    """The event as the sweep published it: the row as stored once delivered."""
    row.refresh_from_db()
    assert row.status == Status.DELIVERED
    return row.to_event(published_at=timezone.now().isoformat())


def test_the_domain_and_the_history_table_are_where_the_router_puts_them():
    assert database_of(ScheduledReminder) == "second"
    assert database_of(ScheduledPing) == "default"
    assert {"scheduled_reminder", "scheduling_event_history"} <= tables_on("second")
    assert "scheduled_ping" not in tables_on("second")
    assert "scheduled_reminder" not in tables_on("default")


def test_the_sweep_claims_publishes_and_marks_rows_on_their_database(broker):
    row = reminder()

    result = sweep(ScheduledReminder)

    assert result.delivered == 1
    assert queued_task_ids(broker, "remoteapp") == [row.event_id]
    stored = ScheduledReminder.objects.using("second").get(pk=row.pk)
    assert (stored.status, stored.attempts) == (Status.DELIVERED, 1)


def test_a_row_another_transaction_holds_on_its_database_is_skipped_until_released(broker):
    row = reminder()
    holder = connections.create_connection("second")  # another sweeper's claim, in effect
    try:
        with holder.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute("SELECT 1 FROM scheduled_reminder WHERE id = %s FOR UPDATE", [row.pk])
            assert sweep(ScheduledReminder).delivered == 0
            cursor.execute("ROLLBACK")
    finally:
        holder.close()

    assert sweep(ScheduledReminder).delivered == 1
    assert queued_task_ids(broker, "remoteapp") == [row.event_id]


def test_each_sweeper_slot_of_the_remote_model_has_a_lock_named_for_its_database():
    assert slot_lock(ScheduledReminder, 1).name == f"scheduling:sweep:second:{REMOTE}:1"
    assert slot_lock(ScheduledPing, 0).name == "scheduling:sweep:testapp.scheduledping:0"


def test_handle_once_acts_once_and_marks_the_row_on_its_database(broker):
    row = reminder()
    sweep(ScheduledReminder)
    event = delivered(row)

    for _ in range(2):  # a duplicate delivery of the same message
        with handle_once(event, ScheduledReminder) as locked:
            if locked is not None:
                ReminderSent.objects.create(event_id=event["id"], account_id=locked.account_id)

    row.refresh_from_db()
    assert row.handled_at is not None
    assert list(ReminderSent.objects.values_list("event_id", flat=True)) == [row.event_id]


def test_a_failed_handling_is_recorded_with_its_history_on_the_rows_database(broker):
    row = reminder("fail")
    sweep(ScheduledReminder)

    with pytest.raises(RuntimeError), handle_once(delivered(row), ScheduledReminder):
        raise RuntimeError("the mail server is down")

    row.refresh_from_db()
    assert (row.status, row.attempts) == (Status.PENDING, 1)
    assert history_on("second", row) == [Kind.PUBLISHED, Kind.HANDLING_FAILED]
    assert history_on("default", row) == []


def test_the_sweep_requeues_rows_not_handled_in_time_with_their_history(broker, settings):
    settings.SCHEDULING_HANDLING_TIMEOUT = 60
    row = reminder()
    sweep(ScheduledReminder)
    published_long_ago = timezone.now() - timedelta(minutes=5)
    ScheduledReminder.objects.filter(pk=row.pk).update(delivered_at=published_long_ago)

    result = sweep(ScheduledReminder)

    assert result.requeued == 1
    assert result.delivered == 1  # published again, due now
    assert queued_task_ids(broker, "remoteapp") == [row.event_id, row.event_id]
    assert history_on("second", row) == [Kind.PUBLISHED, Kind.REDELIVERED]


def test_the_purge_deletes_done_rows_and_their_history_on_their_database():
    old, kept = reminder("old"), reminder("kept")
    ScheduledReminder.objects.filter(pk__in=[old.pk, kept.pk]).cancel("gone")
    long_ago = timezone.now() - timedelta(days=30)
    ScheduledReminder.objects.filter(pk=old.pk).update(cancelled_at=long_ago)
    assert history_on("second", old) == [Kind.CANCELLED]

    result = purge_model(ScheduledReminder)

    assert (result.deleted, result.entries) == (1, 1)
    assert list(ScheduledReminder.objects.values_list("pk", flat=True)) == [kept.pk]
    assert history_on("second", old) == []
    assert history_on("second", kept) == [Kind.CANCELLED]


def test_run_due_handles_a_model_on_each_database_in_one_call():
    ping = ScheduledPingFactory(due_at=timezone.now() - timedelta(minutes=1))
    row = reminder()

    assert run_due() == 2

    assert PingEffect.objects.filter(event_id=ping.event_id).count() == 1
    assert ReminderSent.objects.filter(event_id=row.event_id).count() == 1
    assert ScheduledPing.objects.get(pk=ping.pk).handled_at is not None
    assert ScheduledReminder.objects.get(pk=row.pk).handled_at is not None


def test_the_history_endpoint_reads_the_rows_database(api):
    row = reminder()
    ScheduledReminder.objects.filter(pk=row.pk).shift(timedelta(hours=1))

    response = api.get(f"{URL}{row.pk}/history/")

    assert response.status_code == 200
    assert [entry["kind"] for entry in response.json()["results"]] == ["scheduled", "rescheduled"]


def test_the_api_lists_and_cancels_rows_of_the_remote_model(api):
    row = reminder("grace")

    listed = api.get(URL).json()
    cancelled = api.post(f"{URL}cancel/", {"filter": {"account": row.account_id}}, format="json")

    assert [item["id"] for item in listed["results"]] == [row.pk]
    assert cancelled.json() == {"count": 1}
    assert ScheduledReminder.objects.get(pk=row.pk).status == Status.CANCELLED
    assert history_on("second", row) == [Kind.CANCELLED]


def test_the_admin_lists_the_remote_rows_and_shows_a_rows_timeline(admin_client):
    row = reminder("linus")
    ScheduledReminder.objects.filter(pk=row.pk).cancel("moved")

    listing = admin_client.get("/admin/remoteapp/scheduledreminder/?q=linus")
    page = admin_client.get(f"/admin/remoteapp/scheduledreminder/{row.pk}/change/")

    assert listing.status_code == 200
    assert listing.context["cl"].result_count == 1
    assert page.status_code == 200
    assert "moved" in page.content.decode()


def test_metrics_and_the_dashboard_count_the_remote_rows(client, admin_client, settings):
    settings.SCHEDULING_METRICS_TOKEN = TOKEN
    reminder("a")
    reminder("b", ago=timedelta(minutes=-30))  # not due yet
    ScheduledPingFactory(due_at=timezone.now() - timedelta(minutes=1))

    samples = scrape(client)
    shown = admin_client.get("/admin/scheduling/dashboard/data/").json()["models"]

    assert value(samples, "scheduling_pending_rows", model=REMOTE) == 2
    assert value(samples, "scheduling_due_rows", model=REMOTE) == 1
    assert value(samples, "scheduling_pending_rows", model="testapp.scheduledping") == 1
    remote = next(model for model in shown if model["model"] == REMOTE)
    assert (remote["pending"], remote["due_now"]) == (2, 1)


def test_healthz_reports_late_rows_of_the_remote_model(client, settings):
    settings.SCHEDULING_HEALTH_MAX_LATENESS = 60
    reminder(ago=timedelta(minutes=10))

    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["database"] == "ok"
    assert REMOTE in response.json()["delivery"]


def test_scheduling_status_counts_the_remote_rows_by_their_databases_clock():
    reminder(ago=timedelta(minutes=2))
    out = StringIO()

    call_command("scheduling_status", "--json", stdout=out)

    remote = next(item for item in json.loads(out.getvalue()) if item["model"] == REMOTE_LABEL)
    assert (remote["pending"], remote["due_now"]) == (1, 1)
    assert remote["oldest_due_lateness_s"] >= 120


def test_a_batch_is_locked_handled_and_its_failures_recorded_on_the_rows_database(
    broker, monkeypatch
):
    monkeypatch.setattr(ScheduledReminder, "handler_batch_size", 10)
    rows = [reminder("ada"), reminder("fail-bob"), reminder("cy")]
    sweep(ScheduledReminder)
    events = [delivered(row) for row in rows]

    with handle_batch(events, ScheduledReminder) as batch:
        for locked in batch.rows:
            if locked.account.name.startswith("fail"):
                batch.failed(locked, RuntimeError("the mail server refused it"))
            else:
                ReminderSent.objects.create(event_id=locked.event_id, account_id=locked.account_id)

    handled = ScheduledReminder.objects.filter(handled_at__isnull=False)
    assert sorted(handled.values_list("account__name", flat=True)) == ["ada", "cy"]
    assert history_on("second", rows[1]) == [Kind.PUBLISHED, Kind.HANDLING_FAILED]
    assert history_on("default", rows[1]) == []
