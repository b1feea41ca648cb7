import base64
import json
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone

from scheduling.delivery.sweep.batch import begin_batch, claim_due
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.clock import database_now
from scheduling.rows.conf import scheduling_settings
from scheduling.rows.models import ScheduledEvent
from tests.conftest import queued_messages, queued_task_ids
from tests.factories import PingFactory, make_due_pings

Status = ScheduledEvent.Status


def body_of(message):
    return json.loads(base64.b64decode(message["body"]))


@pytest.mark.django_db
def test_it_publishes_exactly_the_due_rows_in_due_order(ping_model, ping_factory, broker):
    now = timezone.now()
    later = ping_factory(due_at=now - timedelta(minutes=1))
    earlier = ping_factory(due_at=now - timedelta(minutes=2))
    future = ping_factory(due_at=now + timedelta(minutes=5))

    result = sweep(ping_model)

    assert (result.delivered, result.expired, result.failed, result.drained) == (2, 0, 0, True)
    assert queued_task_ids(broker, "testapp") == [earlier.event_id, later.event_id]
    later.refresh_from_db()
    future.refresh_from_db()
    assert later.status == Status.DELIVERED
    assert later.delivered_at is not None
    assert later.attempts == 1
    assert future.status == Status.PENDING


@pytest.mark.django_db
def test_it_never_publishes_early(ping_model, ping_factory, broker):
    ping_factory(due_at=database_now() + timedelta(seconds=2))

    assert sweep(ping_model).delivered == 0
    assert broker.llen("testapp") == 0


@pytest.mark.django_db
def test_the_message_is_a_celery_task_message_with_the_event(ping_model, ping_factory, broker):
    row = ping_factory(ping=PingFactory(name="hello"))

    sweep(ping_model)

    (message,) = queued_messages(broker, "testapp")
    assert message["headers"]["task"] == ping_model.handler_task
    assert message["headers"]["id"] == row.event_id
    assert message["headers"]["kwargsrepr"] == f"{{'event': '{row.event_id}'}}"
    args, kwargs, _embed = body_of(message)
    event = kwargs["event"]
    assert args == []
    assert event["id"] == f"{ping_model._meta.label_lower}:{row.pk}:v1"
    assert event["type"] == ping_model._meta.label_lower
    assert (event["model"], event["pk"], event["version"]) == (
        ping_model._meta.label_lower,
        row.pk,
        1,
    )
    assert event["due_at"].endswith("Z")
    assert event["published_at"].endswith("Z")
    assert event["data"] == {"ping": "hello"}
    assert message["properties"]["delivery_info"]["routing_key"] == "testapp"


@pytest.mark.django_db
def test_rows_past_their_maximum_lateness_expire_instead_of_being_published(
    ping_model, ping_factory, broker
):
    stale = ping_factory(due_at=timezone.now() - timedelta(days=2))
    fresh = ping_factory(due_at=timezone.now() - timedelta(hours=1))

    result = sweep(ping_model)

    assert (result.delivered, result.expired) == (1, 1)
    assert queued_task_ids(broker, "testapp") == [fresh.event_id]
    stale.refresh_from_db()
    assert stale.status == Status.EXPIRED


@pytest.mark.django_db
@override_settings(SCHEDULING_MAX_ATTEMPTS=2)
def test_a_poison_row_is_isolated_and_fails_after_max_attempts(ping_model, ping_factory, broker):
    poison = ping_factory(ping=PingFactory(name="poison"))
    good = ping_factory()

    first = sweep(ping_model)
    poison.refresh_from_db()
    assert (first.delivered, first.retrying, first.failed) == (1, 1, 0)
    assert poison.status == Status.PENDING
    assert "TypeError" in poison.last_error

    second = sweep(ping_model)
    poison.refresh_from_db()
    assert (second.delivered, second.failed) == (0, 1)
    assert poison.status == Status.FAILED
    assert poison.attempts == 2
    assert queued_task_ids(broker, "testapp") == [good.event_id]


@pytest.mark.django_db
@override_settings(SCHEDULING_BATCH_SIZE=10)
def test_it_drains_in_bounded_batches(ping_model, broker):
    make_due_pings(35, model=ping_model)

    result = sweep(ping_model)

    assert (result.delivered, result.batches, result.drained) == (35, 4, True)
    assert broker.llen("testapp") == 35


@pytest.mark.django_db
@override_settings(SCHEDULING_BATCH_SIZE=10)
def test_one_sweeper_publishes_in_due_order_across_batches(ping_model, broker):
    pks = make_due_pings(35, model=ping_model)
    # Due order is not insertion order: reverse the due times of the rows in the middle.
    middle = ping_model.objects.filter(pk__in=pks[5:30]).order_by("pk")
    times = [row.due_at for row in middle]
    for row, due_at in zip(middle, reversed(times), strict=True):
        ping_model.objects.filter(pk=row.pk).update(due_at=due_at)
    expected = [row.event_id for row in ping_model.objects.order_by("due_at", "pk")]

    assert sweep(ping_model).batches == 4

    assert queued_task_ids(broker, "testapp") == expected


@pytest.mark.django_db
@override_settings(SCHEDULING_BATCH_SIZE=10, SCHEDULING_TIME_BUDGET=0.001)
def test_it_stops_at_the_time_budget_and_leaves_the_rest_pending(ping_model, broker):
    make_due_pings(35, model=ping_model)

    result = sweep(ping_model)

    assert (result.delivered, result.batches, result.drained) == (10, 1, False)
    assert ping_model.objects.pending().count() == 25


@pytest.mark.django_db
def test_a_held_lock_makes_the_sweep_return_at_once(ping_model, ping_factory, broker):
    from scheduling.delivery.locks import sweep_lock

    ping_factory()
    holder = sweep_lock(f"scheduling:sweep:{ping_model._meta.label_lower}:0", 30)
    assert holder.acquire()

    result = sweep(ping_model)

    assert result.locked_out
    assert result.delivered == 0
    holder.release()
    assert sweep(ping_model).delivered == 1


@pytest.mark.django_db
def test_a_rescheduled_row_is_published_with_its_new_version(ping_model, ping_factory, broker):
    row = ping_factory(due_at=timezone.now() + timedelta(days=1))
    ping_model.objects.filter(pk=row.pk).deliver_now()

    sweep(ping_model)

    assert queued_task_ids(broker, "testapp") == [f"{ping_model._meta.label_lower}:{row.pk}:v2"]


@pytest.mark.django_db(transaction=True)
def test_a_reschedule_racing_a_claim_never_moves_the_delivered_row(ping_model, ping_factory):
    row = ping_factory(ping=PingFactory(group="album"))
    claimed = threading.Event()
    release = threading.Event()
    outcome = {}

    def sweeper_transaction():
        with transaction.atomic():
            (locked,) = claim_due(ping_model, cutoff=database_now(), limit=10)
            claimed.set()
            release.wait(10)
            ping_model.objects.filter(pk=locked.pk).update(status=Status.DELIVERED)
        connection.close()

    def business_reschedule():
        # A join in the filter: Django turns this into UPDATE ... WHERE id IN (SELECT ...).
        selection = ping_model.objects.filter(ping__group="album")
        outcome["count"] = selection.shift(timedelta(days=7))
        connection.close()

    sweeper = threading.Thread(target=sweeper_transaction)
    sweeper.start()
    claimed.wait(10)
    mover = threading.Thread(target=business_reschedule)
    mover.start()
    time.sleep(0.3)  # the reschedule is now blocked on the sweeper's row lock
    release.set()
    sweeper.join(10)
    mover.join(10)

    row.refresh_from_db()
    assert outcome["count"] == 0
    assert row.status == Status.DELIVERED
    assert row.version == 1


@pytest.mark.django_db
def test_after_batch_runs_in_the_batch_transaction_with_the_marked_rows(
    ping_model, ping_factory, broker, monkeypatch
):
    seen = {}

    def record(cls, *, delivered, expired, failed, now):
        seen["delivered"] = sorted(row.pk for row in delivered)
        seen["expired"] = sorted(row.pk for row in expired)
        seen["statuses"] = {row.status for row in delivered + expired}
        seen["in_transaction"] = connection.in_atomic_block
        seen["now"] = now

    monkeypatch.setattr(ping_model, "after_batch", classmethod(record))
    fresh = ping_factory()
    stale = ping_factory(due_at=timezone.now() - timedelta(days=2))

    sweep(ping_model)

    assert seen["delivered"] == [fresh.pk]
    assert seen["expired"] == [stale.pk]
    assert seen["statuses"] == {Status.DELIVERED, Status.EXPIRED}
    assert seen["in_transaction"]
    assert seen["now"] <= timezone.now()


@pytest.mark.django_db
def test_a_holding_sweep_delivers_rows_as_they_fall_due_and_never_early(
    ping_model, ping_factory, broker
):
    base = database_now()
    soon = ping_factory(due_at=base + timedelta(seconds=0.3))
    later = ping_factory(due_at=base + timedelta(seconds=0.8))
    after_the_hold = ping_factory(due_at=base + timedelta(seconds=5))

    result = sweep(ping_model, hold=1.5)

    assert result.delivered == 2
    assert queued_task_ids(broker, "testapp") == [soon.event_id, later.event_id]
    for row in (soon, later):
        row.refresh_from_db()
        assert row.delivered_at >= row.due_at
    after_the_hold.refresh_from_db()
    assert after_the_hold.status == Status.PENDING


@pytest.mark.django_db
def test_without_a_hold_the_sweep_leaves_rows_not_yet_due_to_the_next_tick(
    ping_model, ping_factory, broker
):
    ping_factory(due_at=database_now() + timedelta(seconds=0.3))

    assert sweep(ping_model).delivered == 0


@pytest.mark.django_db(transaction=True)  # the settings last to the end of the transaction
def test_the_sweep_transaction_turns_off_jit_and_parallel_plans_for_itself_alone():
    def planner() -> tuple[str, str]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('jit'), current_setting('max_parallel_workers_per_gather')"
            )
            row = cursor.fetchone()
        return row[0], row[1]

    before = planner()
    with transaction.atomic():
        begin_batch(scheduling_settings(), None)
        inside = planner()

    assert inside == ("off", "0")
    assert planner() == before
