"""Every write of the purchases domain. Each service is one transaction, so the scheduled rows
always move with the dates they are computed from; the admin and the API call these.

Concurrency: every service that reads or writes a release's dates first locks the release
row. A pre-order created while the release moves therefore sees either the old date (and its
row is then moved) or the new one, never a mix.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core import signing
from django.core.mail import send_mail
from django.core.mail.backends.base import BaseEmailBackend
from django.db import connection, transaction
from django.db.models import Model
from django.urls import reverse
from django.utils import timezone

from purchases.headers import header_text
from purchases.models import Customer, Purchase, Release, ScheduledPurchase, Track
from purchases.refunds import send_refund_confirmation
from scheduling import require_aware, storable_utc, traced_insert

DOWNLOAD_SALT = "purchases.download"


def due_time(date: datetime, now: datetime) -> datetime:
    """A date already past is due now."""
    return max(date, now)


def track_date(track_release_date: datetime, release_date: datetime) -> datetime:
    """A staggered track comes out on its own date, or with its release if that is sooner."""
    return min(track_release_date, release_date)


def insert_columns(obj: Model, exclude: tuple[str, ...]) -> tuple[str, list[Any]]:
    """The columns (comma-separated) and values Django would insert for a new `obj`, bar the
    fields in `exclude`: defaults and auto_now included, prepared for the database."""
    fields = [
        field
        for field in obj._meta.concrete_fields
        if not field.primary_key and field.name not in exclude
    ]
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    values = [field.get_db_prep_save(field.pre_save(obj, True), connection) for field in fields]
    return columns, values


def placeholders(values: list[Any]) -> str:
    return ", ".join(["%s"] * len(values))


def _lock_release(pk: int) -> Release:
    return Release.objects.select_for_update().get(pk=pk)


def _share_release(pk: int) -> Release:
    """FOR SHARE: sales of one release run side by side (a release day's rush), while a date
    change, which takes FOR UPDATE, waits for them to commit, and they for it."""
    if connection.vendor != "postgresql":
        return Release.objects.get(pk=pk)
    table = connection.ops.quote_name(Release._meta.db_table)
    rows = list(Release.objects.raw(f"SELECT * FROM {table} WHERE id = %s FOR SHARE", [pk]))
    if not rows:
        raise Release.DoesNotExist(f"No release with id {pk}.")
    return rows[0]


@transaction.atomic
def purchase_create(*, customer: Customer, release: Release) -> Purchase:
    """Sell a release and schedule its fulfillment: the whole release at its date, plus each
    staggered track at its own.

    Only the ids of `customer` and `release` are read: both are checked here, so a caller that
    has the ids need not load the rows first (the API does not). Raises Release.DoesNotExist
    or Customer.DoesNotExist.

    Two statements, the hot path of a release day's rush: the release share-locked, then one
    INSERT of the purchase and every scheduled row. The second must be its own statement: a
    statement's snapshot is taken when it starts, so tracks read in the first would predate a
    track move the lock waited for.
    """
    release = _share_release(release.pk)
    purchase = Purchase(customer_id=customer.pk, release=release)
    if connection.vendor != "postgresql":
        return _create_sale(purchase)
    purchase.pk = _insert_sale(purchase, release.release_date)
    if purchase.pk is None:
        raise Customer.DoesNotExist(f"No customer with id {customer.pk}.")
    return purchase


def _create_sale(purchase: Purchase) -> Purchase:
    """The same sale through the ORM, for databases without INSERT in WITH (SQLite)."""
    if not Customer.objects.filter(pk=purchase.customer_id).exists():
        raise Customer.DoesNotExist(f"No customer with id {purchase.customer_id}.")
    purchase.save()
    release, now = purchase.release, timezone.now()
    rows = [ScheduledPurchase(purchase=purchase, due_at=due_time(release.release_date, now))]
    rows += [
        ScheduledPurchase(
            purchase=purchase,
            track=track,
            due_at=due_time(track_date(own, release.release_date), now),
        )
        for track, own in _staggered_tracks(release)
    ]
    ScheduledPurchase.objects.bulk_create(rows)
    return purchase


def _insert_sale(purchase: Purchase, release_date: datetime) -> int | None:
    """Insert `purchase` and its scheduled rows (the fulfillment of `due_time` and
    `track_date`, in SQL); its id, or None when its customer does not exist."""
    now = timezone.now()
    bought, bought_values = insert_columns(purchase, exclude=("customer",))
    row, row_values = insert_columns(
        ScheduledPurchase(purchase_id=0, due_at=now), exclude=("purchase", "track", "due_at")
    )
    sale = f"""
        WITH purchase AS (
            INSERT INTO purchases_purchase (customer_id, {bought})
            SELECT id, {placeholders(bought_values)} FROM purchases_customer WHERE id = %s
            RETURNING id
        ), fulfillment (track_id, due_at) AS (
            SELECT NULL::bigint, GREATEST(%s, %s)
            UNION ALL
            SELECT id, GREATEST(LEAST(release_date, %s), %s) FROM purchases_track
            WHERE release_id = %s AND release_date IS NOT NULL
        )
        INSERT INTO scheduled_purchase (purchase_id, track_id, due_at, {row})
        SELECT purchase.id, fulfillment.track_id, fulfillment.due_at, {placeholders(row_values)}
        FROM purchase, fulfillment
        RETURNING purchase_id, id
    """
    params = [*bought_values, purchase.customer_id, release_date, now]
    params += [release_date, now, purchase.release_id, *row_values]
    # The rows keep the trace of the request that sold the release (docs/tracing.md).
    with traced_insert(ScheduledPurchase) as keep_context, connection.cursor() as cursor:
        cursor.execute(sale, params)
        inserted = cursor.fetchall()
        keep_context([row_id for _, row_id in inserted])
    return inserted[0][0] if inserted else None


@transaction.atomic
def release_move(*, release: Release, release_date: datetime) -> int:
    """Move a release and its pending whole-release emails, and the track emails its new date
    makes sooner (or no longer holds back); returns the rows moved."""
    storable_utc(require_aware(release_date, "release_date"))
    locked = _lock_release(release.pk)
    before = locked.release_date
    locked.release_date = release.release_date = release_date
    locked.save(update_fields=["release_date"])
    now = timezone.now()
    rows = ScheduledPurchase.objects.filter(purchase__release=locked, track__isnull=True)
    return rows.reschedule(due_time(release_date, now)) + _move_track_rows(locked, before, now)


def _move_track_rows(release: Release, before: datetime, now: datetime) -> int:
    """Track emails whose date the release move changes: those it now holds back, or no more."""
    moved = 0
    for track, own in _staggered_tracks(release):
        due = track_date(own, release.release_date)
        if due != track_date(own, before):
            moved += ScheduledPurchase.objects.filter(track=track).reschedule(due_time(due, now))
    return moved


def _staggered_tracks(release: Release) -> list[tuple[Track, datetime]]:
    """The release's tracks with a date of their own, with that date."""
    tracks = release.tracks.filter(release_date__isnull=False)
    return [(track, track.release_date) for track in tracks if track.release_date is not None]


@transaction.atomic
def track_move(*, track: Track, release_date: datetime | None) -> int:
    """Give a track its own (earlier) release date and move its pending emails.

    A track that becomes staggered after pre-orders were sold is scheduled for every paid
    purchase still waiting for the release. With no date the track comes out with the release
    and its own pending emails are cancelled. Returns the rows moved, added or cancelled.
    """
    if release_date is not None:
        storable_utc(require_aware(release_date, "release_date"))
    release = _lock_release(track.release_id)
    track.release_date = release_date
    track.save(update_fields=["release_date"])
    rows = ScheduledPurchase.objects.filter(track=track)
    if release_date is None:
        return rows.cancel("track released with its release")
    due_at = due_time(track_date(release_date, release.release_date), timezone.now())
    return rows.reschedule(due_at) + _schedule_track_for_waiting_purchases(track, due_at)


def _schedule_track_for_waiting_purchases(track: Track, due_at: datetime) -> int:
    candidates = (
        Purchase.objects.filter(
            release_id=track.release_id,
            status=Purchase.Status.PAID,
            scheduled__track__isnull=True,
            scheduled__status=ScheduledPurchase.Status.PENDING,
        )
        .exclude(scheduled__track=track)
        .select_for_update(of=("self",))
        .values_list("pk", flat=True)
    )
    # The purchase locks make a concurrent refund commit first or wait for our rows (which it
    # then cancels). Read again once locked: a refund that committed while we waited shows now.
    waiting = Purchase.objects.filter(pk__in=list(candidates), status=Purchase.Status.PAID)
    rows = [
        ScheduledPurchase(purchase_id=pk, track=track, due_at=due_at)
        for pk in waiting.values_list("pk", flat=True)
    ]
    return len(ScheduledPurchase.objects.bulk_create(rows))


@transaction.atomic
def purchase_refund(*, purchase: Purchase) -> int:
    """Mark a purchase refunded and cancel its pending emails; returns the rows cancelled. The
    first refund enqueues its confirmation email (purchases.refunds), in this transaction."""
    locked = Purchase.objects.select_for_update().get(pk=purchase.pk)
    if locked.status != Purchase.Status.REFUNDED:
        locked.status = Purchase.Status.REFUNDED
        locked.save(update_fields=["status"])
        send_refund_confirmation.enqueue(locked.pk)
    purchase.status = locked.status
    return ScheduledPurchase.objects.filter(purchase=locked).cancel("refunded")


def download_token(row: ScheduledPurchase) -> str:
    return signing.dumps({"purchase": row.purchase_id, "track": row.track_id}, salt=DOWNLOAD_SALT)


def download_url(row: ScheduledPurchase) -> str:
    base = settings.PURCHASES_SITE_URL.rstrip("/")
    return base + reverse("purchases:download", kwargs={"token": download_token(row)})


def fulfillment_send(*, row: ScheduledPurchase, connection: BaseEmailBackend | None = None) -> bool:
    """Email the customer their download link (on `connection`, an open email backend, if
    given); a refunded purchase gets nothing.

    Called as handle_once()'s effect, which holds the row's lock. Locking the purchase too makes
    a refund either commit first (and nothing is sent) or wait until the email is out. A batch
    reads its rows' purchases, customers, releases and tracks beforehand
    (`fulfillment_prefetch`); the lock then reads the purchase's status again.
    """
    if ScheduledPurchase.purchase.is_cached(row):
        purchase = row.purchase
        locked = Purchase.objects.select_for_update().filter(pk=purchase.pk)
        purchase.status = locked.values_list("status", flat=True).get()
    else:
        purchase = (
            Purchase.objects.select_for_update(of=("self",))
            .select_related("customer", "release__artist")
            .get(pk=row.purchase_id)
        )
    if purchase.status == Purchase.Status.REFUNDED:
        return False
    title = row.track.title if row.track else purchase.release.title
    send_mail(
        # Names are refused with control characters at input; a row stored before that rule
        # gets them cleaned here rather than failing with BadHeaderError.
        subject=header_text(f"Your download: {purchase.release.artist.name} - {title}"),
        message=f"Hello {purchase.customer.name or purchase.customer.email},\n\n"
        f"{title} is out. Download your files here:\n{download_url(row)}\n",
        from_email=None,
        recipient_list=[purchase.customer.email],
        connection=connection,
    )
    return True


def fulfillment_prefetch(rows: Sequence[ScheduledPurchase]) -> None:
    """What fulfillment_send reads of a batch's rows: their purchases with customers, releases
    and artists in one query, their tracks in another."""
    purchases = Purchase.objects.select_related("customer", "release__artist").in_bulk(
        {row.purchase_id for row in rows}
    )
    tracks = Track.objects.in_bulk({row.track_id for row in rows if row.track_id is not None})
    for row in rows:
        row.purchase = purchases[row.purchase_id]
        row.track = None if row.track_id is None else tracks[row.track_id]
