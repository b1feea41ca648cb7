import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from purchases.models import Customer, Purchase, ScheduledPurchase
from purchases.services import (
    _create_sale,
    purchase_create,
    purchase_refund,
    release_move,
    track_move,
)
from tests.purchases.factories import (
    ArtistFactory,
    CustomerFactory,
    ReleaseFactory,
    TrackFactory,
)

pytestmark = pytest.mark.django_db

Status = ScheduledPurchase.Status
RELEASE_DAY = datetime(2030, 3, 1, 9, 0, tzinfo=UTC)
SINGLE_DAY = datetime(2030, 2, 1, 9, 0, tzinfo=UTC)


def waiting_for_this_transaction(call):
    """Runs `call` on a thread of its own and checks a second later that it waits (for the
    caller's open transaction); the list returned holds its result once the caller commits."""
    result = []

    def run():
        try:
            result.append(call())
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=1)
    assert thread.is_alive(), "it did not wait for the open transaction"
    transaction.on_commit(lambda: thread.join(timeout=10))
    return result


def rows_of(purchase):
    return {row.track_id: row for row in purchase.scheduled.all()}


def test_a_purchase_schedules_the_release_and_each_staggered_track():
    release = ReleaseFactory(release_date=RELEASE_DAY)
    single = TrackFactory(release=release, release_date=SINGLE_DAY)
    TrackFactory(release=release)  # comes out with the album: no row of its own

    purchase = purchase_create(customer=CustomerFactory(), release=release)

    rows = rows_of(purchase)
    assert set(rows) == {None, single.pk}
    assert rows[None].due_at == RELEASE_DAY
    assert rows[single.pk].due_at == SINGLE_DAY
    assert {row.status for row in rows.values()} == {Status.PENDING}
    assert purchase.status == Purchase.Status.PAID


def test_a_purchase_of_a_release_already_out_is_due_now():
    release = ReleaseFactory(release_date=timezone.now() - timedelta(days=3))
    before = timezone.now()

    purchase = purchase_create(customer=CustomerFactory(), release=release)

    (row,) = purchase.scheduled.all()
    assert before <= row.due_at <= timezone.now()
    assert ScheduledPurchase.objects.due().get() == row


def test_moving_a_release_moves_only_its_pending_whole_release_rows():
    release = ReleaseFactory(release_date=RELEASE_DAY)
    single = TrackFactory(release=release, release_date=SINGLE_DAY)
    kept = purchase_create(customer=CustomerFactory(), release=release)
    sent = purchase_create(customer=CustomerFactory(), release=release)
    sent.scheduled.filter(track=None).update(status=Status.DELIVERED)
    other = purchase_create(customer=CustomerFactory(), release=ReleaseFactory())
    later = RELEASE_DAY + timedelta(days=14)

    assert release_move(release=release, release_date=later) == 1

    release.refresh_from_db()
    assert release.release_date == later
    moved = rows_of(kept)
    assert (moved[None].due_at, moved[None].version) == (later, 2)
    assert moved[single.pk].due_at == SINGLE_DAY
    assert rows_of(sent)[None].due_at == RELEASE_DAY
    assert rows_of(other)[None].version == 1


def test_moving_a_track_moves_its_rows_and_schedules_waiting_buyers():
    release = ReleaseFactory(release_date=RELEASE_DAY)
    track = TrackFactory(release=release)
    waiting = purchase_create(customer=CustomerFactory(), release=release)
    refunded = purchase_create(customer=CustomerFactory(), release=release)
    purchase_refund(purchase=refunded)

    assert track_move(track=track, release_date=SINGLE_DAY) == 1
    assert rows_of(waiting)[track.pk].due_at == SINGLE_DAY
    assert track.pk not in rows_of(refunded)

    earlier = SINGLE_DAY - timedelta(days=7)
    assert track_move(track=track, release_date=earlier) == 1
    assert (rows_of(waiting)[track.pk].due_at, rows_of(waiting)[track.pk].version) == (earlier, 2)


def test_a_track_dated_after_its_release_is_scheduled_with_the_release():
    release = ReleaseFactory(release_date=RELEASE_DAY)
    late = TrackFactory(release=release, release_date=RELEASE_DAY + timedelta(days=5))

    purchase = purchase_create(customer=CustomerFactory(), release=release)

    assert rows_of(purchase)[late.pk].due_at == RELEASE_DAY


def test_moving_a_track_after_its_release_keeps_it_with_the_release():
    release = ReleaseFactory(release_date=RELEASE_DAY)
    track = TrackFactory(release=release, release_date=SINGLE_DAY)
    purchase = purchase_create(customer=CustomerFactory(), release=release)

    track_move(track=track, release_date=RELEASE_DAY + timedelta(days=5))

    assert rows_of(purchase)[track.pk].due_at == RELEASE_DAY


def test_moving_a_release_before_its_tracks_brings_them_along_and_back():
    release = ReleaseFactory(release_date=RELEASE_DAY)
    track = TrackFactory(release=release, release_date=SINGLE_DAY)
    purchase = purchase_create(customer=CustomerFactory(), release=release)
    sooner = SINGLE_DAY - timedelta(days=10)

    assert release_move(release=release, release_date=sooner) == 2
    assert {row.due_at for row in purchase.scheduled.all()} == {sooner}

    assert release_move(release=release, release_date=RELEASE_DAY) == 2
    rows = rows_of(purchase)
    assert (rows[None].due_at, rows[track.pk].due_at) == (RELEASE_DAY, SINGLE_DAY)
    assert rows[track.pk].version == 3


def test_a_track_without_its_own_date_no_longer_has_its_own_email():
    release = ReleaseFactory(release_date=RELEASE_DAY)
    track = TrackFactory(release=release, release_date=SINGLE_DAY)
    purchase = purchase_create(customer=CustomerFactory(), release=release)

    assert track_move(track=track, release_date=None) == 1

    assert rows_of(purchase)[track.pk].status == Status.CANCELLED
    assert rows_of(purchase)[None].status == Status.PENDING


def test_a_refund_cancels_only_that_purchases_pending_rows():
    release = ReleaseFactory(release_date=RELEASE_DAY)
    TrackFactory(release=release, release_date=SINGLE_DAY)
    refunded = purchase_create(customer=CustomerFactory(), release=release)
    refunded.scheduled.exclude(track=None).update(status=Status.DELIVERED)
    kept = purchase_create(customer=CustomerFactory(), release=release)

    assert purchase_refund(purchase=refunded) == 1

    refunded.refresh_from_db()
    assert refunded.status == Purchase.Status.REFUNDED
    statuses = {row.status for row in refunded.scheduled.all()}
    assert statuses == {Status.CANCELLED, Status.DELIVERED}
    assert rows_of(refunded)[None].cancel_reason == "refunded"
    assert {row.status for row in kept.scheduled.all()} == {Status.PENDING}
    assert purchase_refund(purchase=refunded) == 0


def test_bulk_changes_select_rows_by_artist_and_account_through_joins():
    artist = ArtistFactory()
    sibling = ArtistFactory(account=artist.account)
    stranger = ArtistFactory()
    rows = {
        who: purchase_create(
            customer=CustomerFactory(), release=ReleaseFactory(artist=who, release_date=RELEASE_DAY)
        ).scheduled.get()
        for who in (artist, sibling, stranger)
    }

    by_artist = ScheduledPurchase.objects.filter(purchase__release__artist=artist)
    assert by_artist.shift(timedelta(days=7)) == 1
    by_account = ScheduledPurchase.objects.filter(purchase__release__artist__account=artist.account)
    assert by_account.cancel("account suspended") == 2

    for row in rows.values():
        row.refresh_from_db()
    assert rows[artist].due_at == RELEASE_DAY + timedelta(days=7)
    assert rows[artist].status == rows[sibling].status == Status.CANCELLED
    assert rows[stranger].status == Status.PENDING
    assert rows[stranger].due_at == RELEASE_DAY


def test_a_second_row_for_the_same_purchase_and_track_is_refused_by_the_database():
    from django.db import IntegrityError

    purchase = purchase_create(customer=CustomerFactory(), release=ReleaseFactory())

    with pytest.raises(IntegrityError):
        ScheduledPurchase.objects.create(purchase=purchase, due_at=RELEASE_DAY)


def test_moving_to_a_naive_date_is_refused():
    with pytest.raises(ValueError, match="release_date must be timezone-aware"):
        release_move(release=ReleaseFactory(), release_date=datetime(2030, 1, 1))


@pytest.mark.parametrize(
    "date",
    [
        datetime(1, 1, 1, 0, 30, tzinfo=timezone.get_fixed_timezone(60)),
        datetime(9500, 1, 1, tzinfo=UTC),
    ],
)
def test_moving_to_a_date_out_of_range_is_refused_and_moves_nothing(date):
    purchase = purchase_create(
        customer=CustomerFactory(), release=ReleaseFactory(release_date=RELEASE_DAY)
    )
    track = TrackFactory(release=purchase.release)

    with pytest.raises(ValueError, match="1970 to 9000"):
        release_move(release=purchase.release, release_date=date)
    with pytest.raises(ValueError, match="1970 to 9000"):
        track_move(track=track, release_date=date)

    purchase.release.refresh_from_db()
    assert purchase.release.release_date == RELEASE_DAY
    assert {(row.due_at, row.version) for row in purchase.scheduled.all()} == {(RELEASE_DAY, 1)}


@pytest.mark.django_db(transaction=True)
def test_a_refund_in_progress_holds_a_track_move_so_no_row_is_left_pending():
    release = ReleaseFactory(release_date=RELEASE_DAY)
    track = TrackFactory(release=release)
    purchase = purchase_create(customer=CustomerFactory(), release=release)

    with transaction.atomic():
        purchase_refund(purchase=purchase)
        moved = waiting_for_this_transaction(
            lambda: track_move(track=track, release_date=SINGLE_DAY)
        )

    assert moved == [0]
    assert not purchase.scheduled.pending().exists()


@pytest.mark.django_db(transaction=True)
def test_sales_of_one_release_do_not_wait_for_each_other_but_a_move_waits_for_them():
    release = ReleaseFactory(release_date=RELEASE_DAY)
    first_sale_open = threading.Event()
    finish_first_sale = threading.Event()
    moved = threading.Event()

    def first_sale() -> None:
        with transaction.atomic():
            purchase_create(customer=CustomerFactory.create(), release=release)
            first_sale_open.set()
            finish_first_sale.wait(10)
        connection.close()

    def move() -> None:
        release_move(release=release, release_date=RELEASE_DAY + timedelta(days=7))
        moved.set()
        connection.close()

    seller = threading.Thread(target=first_sale)
    seller.start()
    assert first_sale_open.wait(10)

    purchase_create(
        customer=CustomerFactory.create(), release=release
    )  # does not wait for the first
    mover = threading.Thread(target=move)
    mover.start()
    assert not moved.wait(0.5), "the move must wait for the open sale"
    finish_first_sale.set()
    seller.join(10)
    mover.join(10)

    assert moved.is_set()
    due = set(ScheduledPurchase.objects.values_list("due_at", flat=True))
    assert due == {RELEASE_DAY + timedelta(days=7)}


@pytest.mark.django_db(transaction=True)
def test_a_sale_waiting_for_a_track_move_schedules_the_track_as_moved():
    # The sale's share lock waits for the move; the rows are then computed in a later
    # statement, whose snapshot shows the track's new date.
    release = ReleaseFactory(release_date=RELEASE_DAY)
    track = TrackFactory(release=release)
    customer = CustomerFactory()

    with transaction.atomic():
        track_move(track=track, release_date=SINGLE_DAY)
        sold = waiting_for_this_transaction(
            lambda: purchase_create(customer=customer, release=release)
        )

    rows = rows_of(sold[0])
    assert set(rows) == {None, track.pk}
    assert rows[track.pk].due_at == SINGLE_DAY


def test_a_sale_to_an_unknown_customer_is_refused_and_inserts_nothing():
    release = ReleaseFactory(release_date=RELEASE_DAY)

    with pytest.raises(Customer.DoesNotExist):
        purchase_create(customer=Customer(pk=999_999), release=release)

    assert not Purchase.objects.exists()
    assert not ScheduledPurchase.objects.exists()


def test_the_sale_statement_writes_the_rows_the_orm_would():
    release = ReleaseFactory(release_date=RELEASE_DAY)
    TrackFactory(release=release, release_date=SINGLE_DAY)
    TrackFactory(release=release, release_date=RELEASE_DAY + timedelta(days=1))
    ignored = {"id", "purchase", "created_at", "updated_at"}

    def columns(purchase):
        return sorted(
            (
                {f.name: getattr(row, f.attname) for f in row._meta.concrete_fields}
                for row in purchase.scheduled.order_by("track")
            ),
            key=lambda row: row["track"] or 0,
        )

    by_sql = purchase_create(customer=CustomerFactory(), release=release)
    by_orm = _create_sale(Purchase(customer=CustomerFactory(), release=release))

    assert [{k: v for k, v in row.items() if k not in ignored} for row in columns(by_sql)] == [
        {k: v for k, v in row.items() if k not in ignored} for row in columns(by_orm)
    ]
    stored = Purchase.objects.get(pk=by_sql.pk)
    assert (stored.status, stored.created_at) == (by_sql.status, by_sql.created_at)
