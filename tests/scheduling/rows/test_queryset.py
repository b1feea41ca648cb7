import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduling.rows.models import ScheduledEvent
from tests.factories import PingFactory

pytestmark = pytest.mark.django_db

Status = ScheduledEvent.Status
FUTURE = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


def one_of_each_status(factory, **kwargs):
    return {status: factory(status=status, **kwargs) for status in Status.values}


def reload(row):
    row.refresh_from_db()
    return row


def test_it_finds_pending_and_due_rows(ping_model, ping_factory):
    past = ping_factory(due_at=timezone.now() - timedelta(seconds=1))
    future = ping_factory(due_at=timezone.now() + timedelta(hours=1))
    ping_factory(status=Status.DELIVERED)

    assert set(ping_model.objects.pending()) == {past, future}
    assert list(ping_model.objects.due()) == [past]
    assert set(ping_model.objects.due(now=FUTURE)) == {past, future}


def test_it_reschedules_only_pending_rows_and_bumps_their_version(ping_model, ping_factory):
    rows = one_of_each_status(
        ping_factory,
    )

    assert ping_model.objects.reschedule(FUTURE) == 1

    assert reload(rows["pending"]).due_at == FUTURE
    assert rows["pending"].version == 2
    for status in ("delivered", "cancelled", "expired", "failed"):
        assert reload(rows[status]).version == 1
        assert rows[status].due_at != FUTURE


def test_it_does_not_count_or_bump_rows_already_at_the_new_time(ping_model, ping_factory):
    row = ping_factory(due_at=FUTURE)

    assert ping_model.objects.reschedule(FUTURE) == 0
    assert reload(row).version == 1


def test_it_shifts_pending_rows_by_a_delta(ping_model, ping_factory):
    row = ping_factory(due_at=FUTURE)
    delivered = ping_factory(due_at=FUTURE, status=Status.DELIVERED)

    assert ping_model.objects.shift(timedelta(days=7)) == 1
    assert ping_model.objects.shift(timedelta(hours=-2)) == 1
    assert ping_model.objects.shift(timedelta(0)) == 0

    assert reload(row).due_at == FUTURE + timedelta(days=7, hours=-2)
    assert row.version == 3
    assert reload(delivered).due_at == FUTURE


def test_it_cancels_only_pending_rows_with_a_reason(ping_model, ping_factory):
    rows = one_of_each_status(
        ping_factory,
    )

    assert ping_model.objects.cancel("refunded") == 1

    cancelled = reload(rows["pending"])
    assert cancelled.status == Status.CANCELLED
    assert cancelled.cancel_reason == "refunded"
    assert cancelled.cancelled_at is not None
    assert cancelled.version == 1
    assert reload(rows["delivered"]).status == Status.DELIVERED


def test_deliver_now_pulls_future_pending_rows_to_the_database_clock(ping_model, ping_factory):
    future = ping_factory(due_at=FUTURE)
    already_due = ping_factory()
    delivered = ping_factory(due_at=FUTURE, status=Status.DELIVERED)

    assert ping_model.objects.deliver_now() == 1

    assert reload(future).due_at <= timezone.now()
    assert future.version == 2
    assert reload(already_due).version == 1
    assert reload(delivered).due_at == FUTURE


def test_retry_puts_failed_and_expired_rows_back_to_pending_now(ping_model, ping_factory):
    rows = one_of_each_status(ping_factory, attempts=3, last_error="boom")

    assert ping_model.objects.retry() == 2

    for status in ("failed", "expired"):
        row = reload(rows[status])
        assert row.status == Status.PENDING
        assert (row.attempts, row.last_error, row.version) == (0, "", 2)
        assert row.due_at <= timezone.now()
    assert reload(rows["pending"]).attempts == 3
    assert reload(rows["delivered"]).status == Status.DELIVERED


def test_bulk_methods_work_behind_filters_that_join_the_entity(ping_model, ping_factory):
    mine = ping_factory(ping=PingFactory(group="artist-1"), due_at=FUTURE)
    other = ping_factory(ping=PingFactory(group="artist-2"), due_at=FUTURE)
    delivered_mine = ping_factory(
        ping=PingFactory(group="artist-1"), due_at=FUTURE, status=Status.DELIVERED
    )

    selection = ping_model.objects.filter(ping__group="artist-1")
    assert selection.shift(timedelta(days=1)) == 1
    assert selection.cancel("moved label") == 1

    assert reload(mine).status == Status.CANCELLED
    assert reload(mine).due_at == FUTURE + timedelta(days=1)
    assert reload(other).status == Status.PENDING
    assert reload(delivered_mine).due_at == FUTURE


# Each bulk method, the statuses it may change, and the call.
BULK_METHODS = {
    "reschedule": ({"pending"}, lambda rows: rows.reschedule(FUTURE + timedelta(days=3))),
    "shift": ({"pending"}, lambda rows: rows.shift(timedelta(hours=5))),
    "cancel": ({"pending"}, lambda rows: rows.cancel("refunded")),
    "deliver_now": ({"pending"}, lambda rows: rows.deliver_now()),
    "retry": ({"failed", "expired"}, lambda rows: rows.retry()),
}


@pytest.mark.parametrize("method", BULK_METHODS)
def test_each_bulk_method_behind_a_join_changes_only_its_statuses_of_the_selection(
    ping_model, ping_factory, method
):
    changes, call = BULK_METHODS[method]
    mine = one_of_each_status(ping_factory, ping=PingFactory(group="artist-1"), due_at=FUTURE)
    others = one_of_each_status(ping_factory, ping=PingFactory(group="artist-2"), due_at=FUTURE)
    before = {row.pk: snapshot(row) for row in ping_model.objects.all()}

    assert call(ping_model.objects.filter(ping__group="artist-1")) == len(changes)

    changed = {status for status, row in mine.items() if snapshot(reload(row)) != before[row.pk]}
    assert changed == changes
    assert all(snapshot(reload(row)) == before[row.pk] for row in others.values())


def snapshot(row):
    return (row.status, row.due_at, row.version)


@pytest.mark.parametrize("method", ["reschedule", "due"])
def test_naive_datetimes_are_refused_with_a_clear_error(ping_model, method):
    naive = datetime(2030, 1, 1, 9, 0)
    with pytest.raises(ValueError, match=r"must be timezone-aware .* 2030-01-01T09:00:00"):
        getattr(ping_model.objects, method)(naive)


def test_naive_due_at_is_refused_on_save_and_bulk_create(ping_model):
    ping = PingFactory()
    with pytest.raises(ValueError, match="due_at must be timezone-aware"):
        ping_model.objects.create(ping=ping, due_at=datetime(2030, 1, 1))
    with pytest.raises(ValueError, match="due_at must be timezone-aware"):
        ping_model.objects.bulk_create([ping_model(ping=ping, due_at=datetime(2030, 1, 1))])


def test_non_datetime_values_are_refused(ping_model):
    with pytest.raises(TypeError, match=r"due_at must be a timezone-aware datetime"):
        ping_model.objects.reschedule("2030-01-01")
    with pytest.raises(TypeError, match=r"delta must be a datetime\.timedelta"):
        ping_model.objects.shift(3600)


def test_event_id_names_model_pk_and_version(ping_model, ping_factory):
    row = ping_factory()
    assert row.event_id == f"{ping_model._meta.label_lower}:{row.pk}:v1"


def test_each_concrete_model_gets_the_partial_pending_due_index(ping_model):
    pending_due, awaiting, failed = ping_model._meta.indexes
    assert pending_due.fields == ["due_at", "id"]
    assert str(pending_due.condition) == "(AND: ('status', 'pending'))"
    assert awaiting.fields == ["delivered_at"]
    assert str(awaiting.condition) == "(AND: ('handled_at__isnull', True), ('status', 'delivered'))"
    assert failed.fields == ["updated_at", "id"]
    assert str(failed.condition) == "(AND: ('status', 'failed'))"
    assert all(len(index.name) <= 30 for index in (pending_due, awaiting, failed))


def test_a_model_without_a_handler_gets_no_awaiting_handling_index():
    from tests.testapp.models import ScheduledNotice

    assert not ScheduledNotice.get_awaits_handling()
    fields = [index.fields for index in ScheduledNotice._meta.indexes]
    assert fields == [["due_at", "id"], ["updated_at", "id"]]


def test_a_shift_that_would_carry_a_row_out_of_range_is_refused_whole(ping_model, ping_factory):
    from scheduling.time.times import STORABLE_FROM

    edge = ping_factory(due_at=STORABLE_FROM + timedelta(days=1))
    other = ping_factory(due_at=FUTURE)

    with pytest.raises(ValueError, match="out of range: enter one in the years 1970 to 9000"):
        ping_model.objects.shift(timedelta(days=-2))

    assert reload(edge).due_at == STORABLE_FROM + timedelta(days=1)
    assert reload(other).due_at == FUTURE
    assert ping_model.objects.shift(timedelta(hours=1)) == 2  # the transaction is still usable


def test_reschedule_refuses_a_time_out_of_range(ping_model, ping_factory):
    ping_factory(due_at=FUTURE)
    with pytest.raises(ValueError, match="out of range"):
        ping_model.objects.reschedule(datetime(1969, 12, 31, tzinfo=UTC))


def test_a_shift_behind_a_join_that_would_carry_a_row_out_of_range_is_refused_whole(
    ping_model, ping_factory
):
    from scheduling.time.times import STORABLE_FROM

    edge = ping_factory(ping=PingFactory(group="artist-1"), due_at=STORABLE_FROM)
    mine = ping_factory(ping=PingFactory(group="artist-1"), due_at=FUTURE)
    selection = ping_model.objects.filter(ping__group="artist-1")

    with pytest.raises(ValueError, match="out of range: enter one in the years 1970 to 9000"):
        selection.shift(timedelta(seconds=-1))

    assert reload(edge).due_at == STORABLE_FROM
    assert reload(mine).due_at == FUTURE
    assert selection.shift(timedelta(hours=1)) == 2  # the transaction is still usable


def test_an_update_behind_a_join_selects_its_rows_as_one_array_not_a_self_join(
    ping_model, ping_factory
):
    # The rows are found once, as an array, and the UPDATE walks the primary key through it;
    # `id IN (SELECT ...)` would be planned as a join of the table to itself (benchmarks.md).
    row = ping_factory(ping=PingFactory(group="artist-1"), due_at=FUTURE)
    selection = ping_model.objects.filter(ping__group="artist-1").order_by("-due_at")

    with CaptureQueriesContext(connection) as queries:
        assert selection.shift(timedelta(days=1)) == 1

    (update,) = [query["sql"] for query in queries if "UPDATE" in query["sql"]]
    # Django 6.1 quotes the subquery's alias ("U0"), 5.2 does not.
    assert re.search(r'"id" = ANY\(ARRAY\(SELECT "?U0"?\."id"', update), update
    assert " IN (SELECT" not in update
    assert "ORDER BY" not in update  # the selection's order would only cost a sort
    assert reload(row).due_at == FUTURE + timedelta(days=1)


def test_an_update_behind_a_sliced_join_moves_only_the_slice_in_its_order(ping_model, ping_factory):
    first, last = (
        ping_factory(ping=PingFactory(group="artist-1"), due_at=FUTURE + timedelta(hours=n))
        for n in (1, 2)
    )
    latest = ping_model.objects.filter(ping__group="artist-1").order_by("-due_at")[:1]

    assert latest.shift(timedelta(days=1)) == 1

    assert reload(first).due_at == FUTURE + timedelta(hours=1)
    assert reload(last).due_at == FUTURE + timedelta(days=1, hours=2)


@pytest.mark.parametrize(
    ("filters", "named"),
    [
        ({"status": "handled"}, ".handled()"),
        ({"status__in": ["pending", "handled"]}, ".handled()"),
        ({"status__iexact": "Handled"}, ".handled()"),
        ({"status": "in_flight"}, ".in_flight()"),
        ({"status": "awaiting_handling"}, ".awaiting_handling()"),
    ],
)
def test_a_status_filter_on_a_state_no_row_has_is_refused_naming_the_method(
    ping_model, filters, named
):
    with pytest.raises(ValueError, match=re.escape(named)):
        ping_model.objects.filter(**filters)
    with pytest.raises(ValueError, match="keeps status 'delivered'"):
        ping_model.objects.exclude(Q(pk=1) | Q(**filters))


def test_handled_rows_are_reached_by_the_method_the_error_names(ping_model, ping_factory):
    handled = ping_factory(status=Status.DELIVERED, handled_at=timezone.now())
    ping_factory(status=Status.DELIVERED)
    assert list(ping_model.objects.handled()) == [handled]
    assert list(ping_model.objects.filter(status="delivered", handled_at__isnull=False)) == [
        handled
    ]
