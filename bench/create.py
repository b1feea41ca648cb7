"""create: scheduled rows through ORM bulk creation, and pre-orders through the REST API.

The REST figure is POST /api/purchases/ (creates the purchase and schedules its email in one
transaction), served by gunicorn and driven by concurrent keep-alive-less clients.
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.authtoken.models import Token

from bench.common import record, sql, timed
from bench.drain import PURCHASE_TABLES, make_rows
from purchases.models import Customer, Purchase, Release, ScheduledPurchase

PORT = 8765


def orm_rows_per_second(count: int) -> float:
    make_rows(count)
    purchases = list(Purchase.objects.values_list("pk", flat=True))
    sql("TRUNCATE scheduled_purchase")
    due = timezone.now() + timedelta(days=1)
    rows = [ScheduledPurchase(purchase_id=pk, due_at=due) for pk in purchases]
    with timed() as elapsed:
        ScheduledPurchase.objects.bulk_create(rows, batch_size=5000)
    return count / elapsed[0]


def api_token() -> str:
    user, _ = get_user_model().objects.get_or_create(
        username="bench", is_superuser=True, is_staff=True
    )
    return Token.objects.get_or_create(user=user)[0].key


def start_server(workers: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "gunicorn", "project.wsgi", "-b", f"127.0.0.1:{PORT}"]
    command += ["-w", str(workers), "--log-level", "warning"]
    # Production settings, but plain HTTP on the loopback: no redirect to HTTPS.
    env = {**os.environ, "DEBUG": "0", "SECRET_KEY": "bench-" * 8, "SECURE_SSL_REDIRECT": "0"}
    server = subprocess.Popen(command, env=env)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
            return server
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("gunicorn did not start")


def client(
    token: str, release: int, customers: list[int], results: list[int], until: float
) -> None:
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    for customer in customers:
        if time.monotonic() >= until:
            return
        conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
        body = json.dumps({"customer": customer, "release": release})
        conn.request("POST", "/api/purchases/", body=body, headers=headers)
        results.append(conn.getresponse().status)
        conn.close()


def rest_requests_per_second(clients: int, seconds: float) -> tuple[float, int]:
    sql("TRUNCATE " + ", ".join(PURCHASE_TABLES) + " CASCADE")
    make_rows(1)
    release = Release.objects.get().pk
    Customer.objects.bulk_create(
        Customer(email=f"api{i}@bench.test", name="api") for i in range(60_000)
    )
    ids = list(Customer.objects.filter(email__startswith="api").values_list("pk", flat=True))
    token = api_token()
    results: list[int] = []
    until = time.monotonic() + seconds
    threads = [
        threading.Thread(target=client, args=(token, release, ids[i::clients], results, until))
        for i in range(clients)
    ]
    with timed() as elapsed:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    failures = sum(status != 201 for status in results)
    return len(results) / elapsed[0], failures


def run_create(rows: int) -> None:
    print(f"create: {rows:,} rows by ORM bulk_create; REST POST /api/purchases/ under gunicorn")
    record("create", "ORM bulk_create", orm_rows_per_second(rows), "rows/s")
    server = start_server(workers=4)
    try:
        rate, failures = rest_requests_per_second(clients=16, seconds=15)
    finally:
        server.terminate()
        server.wait(30)
    if failures:
        raise RuntimeError(f"{failures} requests did not answer 201: the figure would be void")
    record("create", "REST POST /api/purchases/ (16 clients)", rate, "requests/s")
