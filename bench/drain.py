"""drain: N past-due rows delivered by (a) our sweep, (b) the naive way, (c) the claim ceiling.

(b) is what most code does: claim a batch, Celery `send_task` per row, commit.
(c) claims and marks delivered without publishing: what the database alone allows.
"""

import json
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import redis
from celery import current_app
from django.conf import settings
from django.db import connection, transaction
from django.db.models.functions import Now
from django.utils import timezone

from purchases.models import Account, Artist, Customer, Purchase, Release, ScheduledPurchase
from scheduling.base import Status, iso_utc
from scheduling.broker import OutgoingTask
from scheduling.dispatch import claim_due, database_now, sweep

RESULTS = Path(__file__).resolve().parent / "results.jsonl"
BATCH = 1000


def make_rows(count: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE scheduled_purchase, purchases_purchase, purchases_customer,"
            " purchases_track, purchases_release, purchases_artist, purchases_account CASCADE"
        )
    account = Account.objects.create(name="bench")
    release = Release.objects.create(
        artist=Artist.objects.create(name="bench", account=account),
        title="bench",
        release_date=timezone.now() - timedelta(minutes=5),
    )
    customers = Customer.objects.bulk_create(
        Customer(email=f"c{i}@bench.test", name=f"c{i}") for i in range(count)
    )
    purchases = Purchase.objects.bulk_create(
        Purchase(customer=c, release=release) for c in customers
    )
    due = timezone.now() - timedelta(minutes=5)
    ScheduledPurchase.objects.bulk_create(
        (
            ScheduledPurchase(purchase=p, due_at=due + timedelta(microseconds=i))
            for i, p in enumerate(purchases)
        ),
        batch_size=5000,
    )


def reset_rows() -> None:
    ScheduledPurchase.objects.update(status=Status.PENDING, delivered_at=None, attempts=0)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE scheduled_purchase")
    redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()


def drain_with_sweep() -> None:
    while not sweep(ScheduledPurchase, time_budget=3600).drained:
        pass


def drain_naive() -> None:
    app = current_app
    with app.producer_or_acquire() as producer:
        while True:
            with transaction.atomic():
                rows = claim_due(ScheduledPurchase, cutoff=database_now(), limit=BATCH)
                published_at = iso_utc(timezone.now())
                for row in rows:
                    task = row.to_message(published_at)
                    assert isinstance(task, OutgoingTask)
                    app.send_task(
                        task.task_name,
                        kwargs=task.kwargs,
                        task_id=task.task_id,
                        queue=task.queue,
                        producer=producer,
                    )
                ScheduledPurchase.objects.filter(pk__in=[r.pk for r in rows]).update(
                    status=Status.DELIVERED, delivered_at=Now()
                )
            if len(rows) < BATCH:
                return


def drain_ceiling() -> None:
    while True:
        with transaction.atomic():
            rows = claim_due(ScheduledPurchase, cutoff=database_now(), limit=BATCH)
            ScheduledPurchase.objects.filter(pk__in=[r.pk for r in rows]).update(
                status=Status.DELIVERED, delivered_at=Now()
            )
        if len(rows) < BATCH:
            return


def measure(name: str, drain: Callable[[], None], rows: int) -> float:
    reset_rows()
    started = time.perf_counter()
    drain()
    elapsed = time.perf_counter() - started
    delivered = ScheduledPurchase.objects.filter(status=Status.DELIVERED).count()
    queued = redis.Redis.from_url(settings.CELERY_BROKER_URL).llen("purchases")
    assert delivered == rows, f"{name}: {delivered} of {rows} delivered"
    rate = rows / elapsed
    print(
        f"{name:<32} {rows:>9,} rows {elapsed:>8.2f} s {rate:>10,.0f} events/s  queued={queued:,}"
    )
    with RESULTS.open("a") as out:
        out.write(
            json.dumps(
                {
                    "scenario": "drain",
                    "approach": name,
                    "rows": rows,
                    "seconds": round(elapsed, 3),
                    "events_per_s": round(rate),
                }
            )
            + "\n"
        )
    return rate


def run_drain(rows: int) -> None:
    print(f"drain: creating {rows:,} past-due rows in scheduled_purchase ...")
    make_rows(rows)
    ours = measure("a) sweep (batched publisher)", drain_with_sweep, rows)
    naive = measure("b) naive (send_task per row)", drain_naive, rows)
    ceiling = measure("c) ceiling (claim + mark only)", drain_ceiling, rows)
    print(f"a/b = {ours / naive:.1f}x   a/c = {ours / ceiling:.0%}")
