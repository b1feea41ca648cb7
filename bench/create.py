"""create: scheduled rows through ORM bulk creation, and sales through the REST API.

`POST /api/purchases/` creates the purchase and schedules its email in one transaction; the
plain endpoint (bench/plain_api) creates a purchase of the same fields with stock DRF and no
scheduling. One gunicorn serves both (bench.settings, persistent database connections), and
locust, headless, drives them in turn with the same users, in alternating rounds.
"""

import csv
import os
import socket
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.authtoken.models import Token

from bench.anchors import record_against
from bench.common import record, sql, timed
from bench.drain import PURCHASE_TABLES, make_rows
from purchases.models import Customer, Purchase, Release, ScheduledPurchase

PORT = 8765
WORKERS = 4
USERS = 16
ROUNDS = 3
LOCUSTFILE = Path(__file__).resolve().parent / "locustfile.py"
ENDPOINTS = {"PurchaseUser": "/api/purchases/", "PlainPurchaseUser": "/bench/plain-purchases/"}
TARGET_RATE = 500.0  # requests/s, issue #17
TARGET_SHARE = 0.8  # of the plain endpoint's rate


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
    # Production settings (bench/__main__.py's configure) plus the plain endpoint.
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings", "PGAPPNAME": "bench-web"}
    if port_answers():  # another run's server would take the load and void the figures
        raise RuntimeError(f"port {PORT} is taken: is another bench running?")
    server = subprocess.Popen(command, env=env)
    for _ in range(100):
        if server.poll() is not None:
            raise RuntimeError("gunicorn exited at start")
        if port_answers():
            return server
        time.sleep(0.1)
    raise RuntimeError("gunicorn did not start")


def port_answers() -> bool:
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
        return True
    except OSError:
        return False


def sale_data() -> dict[str, str]:
    """One release with no staggered tracks and 60,000 customers, for both endpoints."""
    sql("TRUNCATE " + ", ".join(PURCHASE_TABLES) + " CASCADE")
    make_rows(1)
    sql(
        "INSERT INTO purchases_customer (email, name)"
        " SELECT 'api' || g || '@bench.test', 'api' FROM generate_series(1, 60000) g"
    )
    customers = Customer.objects.filter(email__startswith="api").order_by("pk")
    first, last = customers.first(), customers.last()
    assert first is not None
    assert last is not None
    return {
        "BENCH_TOKEN": api_token(),
        "BENCH_RELEASE": str(Release.objects.get().pk),
        "BENCH_CUSTOMERS": f"{first.pk}-{last.pk}",
    }


def locust(
    user_class: str, seconds: int, data: dict[str, str], *, warm_up: bool = False
) -> dict[str, float]:
    """One headless locust run of `user_class`; its figures from locust's own CSV summary."""
    with tempfile.TemporaryDirectory() as folder:
        prefix = str(Path(folder) / "run")
        command = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless"]
        command += ["-u", str(USERS), "-r", str(USERS), "-t", f"{seconds}s", "--reset-stats"]
        command += ["--host", f"http://127.0.0.1:{PORT}", "--csv", prefix, "--only-summary"]
        command += ["--loglevel", "ERROR", user_class]
        done = subprocess.run(command, env={**os.environ, **data}, capture_output=True, text=True)
        with open(f"{prefix}_stats.csv") as stats:
            rows = [r for r in csv.DictReader(stats) if r["Name"] == ENDPOINTS[user_class]]
        if warm_up:
            return {}
        if not rows:
            raise RuntimeError(f"locust ran no request:\n{done.stdout}\n{done.stderr}")
        row = rows[0]
    return {
        "rate": float(row["Requests/s"]),
        "requests": float(row["Request Count"]),
        "failures": float(row["Failure Count"]),
        "p50": float(row["50%"]),
        "p99": float(row["99%"]),
    }


def rest_figures(seconds: int) -> dict[str, list[dict[str, float]]]:
    data = sale_data()
    server = start_server(WORKERS)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in ENDPOINTS}
    try:
        for user_class in ENDPOINTS:  # warm-up: every worker booted and connected
            locust(user_class, 5, data, warm_up=True)
        for _ in range(ROUNDS):
            for user_class in ("PlainPurchaseUser", "PurchaseUser"):
                runs[user_class].append(locust(user_class, seconds, data))
    finally:
        server.terminate()
        server.wait(30)
    failures = sum(run["failures"] for results in runs.values() for run in results)
    if failures or any(not results[0]["requests"] for results in runs.values()):
        raise RuntimeError(f"{failures:.0f} requests failed (or none ran): the figure is void")
    return runs


def mean(runs: list[dict[str, float]], key: str) -> float:
    return sum(run[key] for run in runs) / len(runs)


def run_create(rows: int, seconds: int) -> None:
    print(f"create: {rows:,} rows by ORM bulk_create; REST under gunicorn ({WORKERS} workers)")
    print(f"  locust headless, {USERS} users, {ROUNDS} rounds of {seconds} s per endpoint")
    record("create", "ORM bulk_create", orm_rows_per_second(rows), "rows/s")
    runs = rest_figures(seconds)
    ours, plain = runs["PurchaseUser"], runs["PlainPurchaseUser"]
    load = os.getloadavg()[0]
    rate, plain_rate = mean(ours, "rate"), mean(plain, "rate")
    record_against(
        "create",
        "REST POST /api/purchases/",
        rate,
        "requests/s",
        anchor=TARGET_RATE,
        anchor_label="target",
        load=load,
    )
    record("create", "  p50 latency", mean(ours, "p50"), "ms", p99=mean(ours, "p99"))
    record("create", "  p99 latency", mean(ours, "p99"), "ms")
    record("create", "REST plain DRF create (no scheduling)", plain_rate, "requests/s")
    record("create", "  p50 latency", mean(plain, "p50"), "ms")
    record("create", "  p99 latency", mean(plain, "p99"), "ms")
    record_against(
        "create",
        "ours / plain",
        rate / plain_rate,
        "x",
        anchor=TARGET_SHARE,
        anchor_label="target: 80% of plain",
    )
    print(f"  (load average {load:.2f} at the end)")
