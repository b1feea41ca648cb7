"""jobs: what a jobs list and a flood of keyed jobs cost (issue #40).

Through Django's test client, on the bench database, as a non-staff user holding the jobs'
permissions:
1. 100 jobs of 1,000 pending runs each: `GET /api/jobs/?limit=100` (seconds, bytes, the
   process's peak memory growth);
2. five PUTs of 1,000 instants (in 2020, then a minute ago), a 60 KB payload and a queue
   callback, each followed by one sweep on the real broker: the answers, the messages left on
   the queue and the bytes Redis holds for it.
"""

import resource
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from bench.common import broker, record
from scheduling.delivery.sweep.run import sweep
from scheduling.jobs.models import Job, ScheduledJobRun

JOBS = 100
RUNS = 1000
FLOOD_PUTS = 5
FLOOD_QUEUE = "bench-flood"
PAYLOAD = {"blob": "x" * 60_000}


def jobs_client() -> Client:
    user, _ = User.objects.get_or_create(username="bench-jobs")
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="scheduling_jobs"))
    client = Client()
    client.force_login(user)
    return client


def make_jobs() -> None:
    ScheduledJobRun.objects.filter(job__key__startswith="bench-list-").delete()
    Job.objects.filter(key__startswith="bench-list-").delete()
    callback = {"type": "queue", "queue": "bench-list"}
    jobs = Job.objects.bulk_create(
        Job(key=f"bench-list-{n:03d}", callback=callback, payload={"n": n}) for n in range(JOBS)
    )
    start = timezone.now() + timedelta(days=30)
    for job in jobs:
        ScheduledJobRun.objects.bulk_create(
            ScheduledJobRun(job=job, due_at=start + timedelta(minutes=m)) for m in range(RUNS)
        )


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_list(client: Client) -> None:
    make_jobs()
    client.get("/api/jobs/?limit=1&key_prefix=bench-list-")  # warm: imports, the schema, a session
    before = peak_rss_mb()
    started = time.perf_counter()
    answer = client.get(f"/api/jobs/?limit={JOBS}&key_prefix=bench-list-")
    took = time.perf_counter() - started
    size = len(answer.content)
    shown = len(answer.json()["results"]) if answer.status_code == 200 else 0
    record("jobs", f"GET ?limit={JOBS}: {answer.status_code}, {shown} jobs", took, "s")
    record("jobs", f"GET ?limit={JOBS}: body", size / 1e6, "MB")
    record("jobs", f"GET ?limit={JOBS}: peak memory growth", peak_rss_mb() - before, "MB")


def flood(client: Client, first: datetime, name: str) -> None:
    queue = f"{FLOOD_QUEUE}-{name}"
    redis = broker()
    redis.delete(queue)
    Job.objects.filter(key__startswith=f"bench-flood-{name}-").delete()
    instants = [(first + timedelta(seconds=s)).isoformat() for s in range(RUNS)]
    codes: list[int] = []
    started = time.perf_counter()
    for n in range(FLOOD_PUTS):
        body: dict[str, Any] = {
            "schedules": instants,
            "callback": {"type": "queue", "queue": queue},
            "payload": PAYLOAD,
        }
        answer = client.put(f"/api/jobs/bench-flood-{name}-{n}/", body, "application/json")
        codes.append(answer.status_code)
        sweep(ScheduledJobRun)
    took = time.perf_counter() - started
    answers = ", ".join(f"{code}x{codes.count(code)}" for code in sorted(set(codes)))
    record("jobs", f"flood ({name}): {FLOOD_PUTS} PUTs + sweeps, answers {answers}", took, "s")
    record("jobs", f"flood ({name}): messages on the queue", float(redis.llen(queue)), "msgs")
    used = redis.memory_usage(queue) or 0
    record("jobs", f"flood ({name}): Redis memory of the queue", used / 1e6, "MB")
    left = ScheduledJobRun.objects.filter(job__key__startswith=f"bench-flood-{name}-")
    record("jobs", f"flood ({name}): runs left pending", float(left.pending().count()), "rows")
    redis.delete(queue)


def run_jobs() -> None:
    client = jobs_client()
    run_list(client)
    flood(client, datetime(2020, 1, 1, tzinfo=UTC), "2020")
    flood(client, timezone.now() - timedelta(minutes=1), "recent")
