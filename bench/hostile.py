"""hostile: what the second hostile round's requests cost once bounded (issue #37).

Through Django's test client, as a superuser, on the bench database:
1. a ten-way diamond of calendars, five levels (each level includes the one below ten times):
   the time to create (or refuse, naming `composition`) each level, the last created level's
   spans (`?count=100`) and the admin's calendar list;
2. one scheduled purchase with `entries` history entries (20,000): the REST history's first
   and last page of 1,000 and the admin's change page of the row.
"""

import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from bench.common import record
from purchases.models import Account, Artist, Customer, Release, ScheduledPurchase
from purchases.services import purchase_create
from scheduling.rows.history.models import EventHistory, Kind
from scheduling.time.calendars.models import Calendar

LEVELS = 5


def seconds(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    answer = call()
    return time.perf_counter() - started, answer


def post_json(client: Client, url: str, name: str, steps: list[dict[str, str]]) -> Any:
    body = {"name": name, "composition": steps}
    return client.post(url, body, content_type="application/json")


def superuser_client() -> Client:
    user = User.objects.filter(username="bench-hostile").first()
    if user is None:
        user = User.objects.create_superuser("bench-hostile", "", "bench-password")
    client = Client()
    client.force_login(user)
    return client


def run_diamond(client: Client) -> None:
    Calendar.objects.filter(name__startswith="diamond-").order_by("-name").delete()
    Calendar.objects.create(name="diamond-0", daily_windows=["22:00-07:00"])
    created = "diamond-0"
    for level in range(1, LEVELS + 1):
        name = f"diamond-{level}"
        steps = [{"op": "include", "calendar": f"diamond-{level - 1}"}] * 10
        took, answer = seconds(partial(post_json, client, "/api/calendars/", name, steps))
        outcome = "created" if answer.status_code == 201 else f"refused {sorted(answer.json())}"
        record("hostile", f"diamond level {level}: {outcome}", took, "s")
        created = name if answer.status_code == 201 else created
    took, _ = seconds(lambda: client.get(f"/api/calendars/{created}/spans/?count=100"))
    record("hostile", f"spans of {created} (100)", took, "s")
    took, _ = seconds(lambda: client.get("/admin/scheduling/calendar/"))
    record("hostile", "admin calendar list", took, "s")


def row_with_history(entries: int) -> ScheduledPurchase:
    account = Account.objects.create(name="bench-hostile")
    artist = Artist.objects.create(name="bench-hostile", account=account)
    release = Release.objects.create(
        artist=artist, title="bench-hostile", release_date=timezone.now() + timedelta(days=30)
    )
    customer = Customer.objects.create(email=f"hostile-{time.time_ns()}@example.com", name="b")
    row = purchase_create(customer=customer, release=release).scheduled.get(track=None)
    EventHistory.objects.bulk_create(
        EventHistory(
            model="purchases.scheduledpurchase",
            row_id=row.pk,
            at=row.created_at + timedelta(seconds=n),
            kind=Kind.HANDLING_FAILED,
            attempt=n,
            detail={"error": "SMTPServerDisconnected"},
        )
        for n in range(entries)
    )
    return row


def run_history(client: Client, entries: int) -> None:
    row = row_with_history(entries)
    url = f"/api/events/purchases/scheduledpurchase/{row.pk}/history/"
    for name, query in (("first", "?limit=1000"), ("last", f"?limit=1000&offset={entries - 999}")):
        took, answer = seconds(partial(client.get, url + query, HTTP_ACCEPT="application/json"))
        assert answer.status_code == 200, answer.status_code
        assert len(answer.json()["results"]) <= 1000
        record("hostile", f"history {entries:,} entries: {name} page of 1,000", took, "s")
    took, _ = seconds(lambda: client.get(f"/admin/purchases/scheduledpurchase/{row.pk}/change/"))
    record("hostile", f"history {entries:,} entries: admin change page", took, "s")


def run_hostile(entries: int) -> None:
    client = superuser_client()
    run_diamond(client)
    run_history(client, entries)
