"""metrics: what one GET /metrics costs at a huge pending backlog.

The table is scheduled_training_notification, built as `scale` builds it (`rows` pending rows,
due in a day); the other scheduled tables are emptied so the figure is this table's. Twenty
scrapes (through Django's test client, with the bearer token) per state, p50 and p99:
1. the schema as shipped, nothing due;
2. with the partial index on failed rows proposed for scheduling/rows/models.py (created here);
3. with that index and 10,000 rows due (the due count and the oldest due row are read).
"""

import statistics
import time

from django.db import connection
from django.test import Client, override_settings

from bench.common import make_notification_rows, record, sql, vacuum
from scheduling.rows.registry import scheduled_models

TABLE = "scheduled_training_notification"
FAILED_INDEX = "bench_notification_failed"
SCRAPES = 20
DUE = 10_000
TOKEN = "bench-token"


def scrape_ms() -> tuple[float, float]:
    client = Client()
    timings = []
    for _ in range(SCRAPES):
        started = time.perf_counter()
        response = client.get("/metrics", headers={"authorization": f"Bearer {TOKEN}"})
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.status_code
    timings.sort()
    return statistics.median(timings), timings[-1]  # of 20, the 99th percentile is the worst


def measure(scenario: str, rows: int) -> None:
    with override_settings(SCHEDULING_METRICS_TOKEN=TOKEN):
        p50, p99 = scrape_ms()
    record("metrics", f"scrape p50 at {rows:,} pending, {scenario}", p50, "ms")
    record("metrics", f"scrape p99 at {rows:,} pending, {scenario}", p99, "ms")


def empty_other_tables() -> None:
    others = [m._meta.db_table for m in scheduled_models() if m._meta.db_table != TABLE]
    sql("TRUNCATE " + ", ".join(connection.ops.quote_name(t) for t in others))


def run_metrics(rows: int) -> None:
    print(f"metrics: scrape cost at {rows:,} pending rows")
    empty_other_tables()
    make_notification_rows(teams=100, rows_per_team=rows // 100, due_in="1 day")
    sql(f"DROP INDEX IF EXISTS {FAILED_INDEX}")
    measure("none due, no failed-rows index", rows)
    sql(f"CREATE INDEX {FAILED_INDEX} ON {TABLE} (updated_at, id) WHERE status = 'failed'")
    vacuum(TABLE)
    measure("none due", rows)
    sql(
        f"UPDATE {TABLE} SET due_at = now() - interval '1 minute'"
        f" WHERE id IN (SELECT id FROM {TABLE} ORDER BY id DESC LIMIT %s)",
        [DUE],
    )
    vacuum(TABLE)
    measure(f"{DUE:,} due", rows)
    sql(f"DROP INDEX {FAILED_INDEX}")
