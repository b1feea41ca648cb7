"""Benchmark: bulk reschedules of 100k pre-order emails, selected by joins.

    DJANGO_SETTINGS_MODULE=project.settings python -m bench.purchases [--buyers N] [--others M]

One album with N buyers (default 100,000) among M other pre-orders of other artists (default
400,000). Times the three ways business code moves or cancels them: `release_move` (the
service), a `shift` by `purchase__release__artist`, and a `cancel` by the customers' email
domain. Runs against a scratch database that Django's test machinery creates next to the
configured one (its name prefixed with "test_") and drops at the end; the configured database
is never written. Prints a small report.
"""

import argparse
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.utils.text import slugify

from bench.common import timed
from bench.scratch import on_scratch_database

if TYPE_CHECKING:
    from purchases.models import Artist, Release

BATCH = 5_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buyers", type=int, default=100_000)
    parser.add_argument("--others", type=int, default=400_000)
    args = parser.parse_args()
    on_scratch_database(lambda: run(args.buyers, args.others))


def run(buyers: int, others: int) -> None:
    from django.db import connection
    from django.utils import timezone

    from purchases.models import Account, Artist, ScheduledPurchase
    from purchases.services import release_move

    release_date = timezone.now() + timedelta(days=30)
    account = Account.objects.create(name="label")
    artist = Artist.objects.create(name="the artist", account=account)
    album = make_release(artist, "the album", release_date, buyers, "example.com")
    busy = Artist.objects.create(name="everyone else", account=account)
    for start in range(0, others, BATCH):
        make_release(busy, f"other {start}", release_date, min(BATCH, others - start), "ex.org")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # as autovacuum would after a bulk load
    total = ScheduledPurchase.objects.count()
    print(f"{total:,} pending pre-order emails, {buyers:,} of them for one album")

    new_date = release_date + timedelta(days=7)
    with timed() as elapsed:
        moved = release_move(release=album, release_date=new_date)
    line("release_move (the service)", moved, elapsed[0])

    by_artist = ScheduledPurchase.objects.filter(purchase__release__artist=artist)
    with timed() as elapsed:
        moved = by_artist.shift(timedelta(days=-7))
    line("shift by purchase__release__artist", moved, elapsed[0])

    by_domain = ScheduledPurchase.objects.filter(
        purchase__customer__email__iendswith="@example.com"
    )
    with timed() as elapsed:
        cancelled = by_domain.cancel("fraud")
    line("cancel by purchase__customer__email__iendswith", cancelled, elapsed[0])


def make_release(
    artist: "Artist", title: str, release_date: datetime, buyers: int, domain: str
) -> "Release":
    """A release of `artist` with `buyers` paid pre-orders, each with its pending
    whole-release email, created in bulk."""
    from purchases.models import Customer, Purchase, Release, ScheduledPurchase

    release = Release.objects.create(artist=artist, title=title, release_date=release_date)
    for chunk in chunks(buyers):
        customers = Customer.objects.bulk_create(
            Customer(email=f"{slugify(title)}-{n}@{domain}", name=f"buyer {n}") for n in chunk
        )
        purchases = Purchase.objects.bulk_create(
            Purchase(customer=customer, release=release) for customer in customers
        )
        ScheduledPurchase.objects.bulk_create(
            ScheduledPurchase(purchase=purchase, due_at=release_date) for purchase in purchases
        )
    return release


def chunks(count: int) -> Iterator[range]:
    for start in range(0, count, BATCH):
        yield range(start, min(start + BATCH, count))


def line(label: str, rows: int, seconds: float) -> None:
    print(f"{label}: {rows:,} rows in {seconds:.2f}s ({rows / seconds:,.0f} rows/s)")


if __name__ == "__main__":
    main()
