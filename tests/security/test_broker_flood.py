"""Issue #40, as a hostile API user: five PUTs of 1,000 instants with a large payload and a queue
callback cannot grow the broker without limit, and a list of jobs of 1,000 runs stays small."""

from datetime import UTC, datetime, timedelta

from django.utils import timezone

from scheduling.delivery.sweep.run import sweep
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.time.times import iso_utc
from tests.scheduling.jobs.conftest import JOBS

FLOOD = {"type": "queue", "queue": "nobody-reads-this"}


def flood(api, start, payload, instants=1000):
    schedules = [iso_utc(start + timedelta(seconds=n)) for n in range(instants)]
    body = {"schedules": schedules, "callback": FLOOD, "payload": payload}
    return [api.put(f"{JOBS}flood-{n}/", body, format="json").status_code for n in range(5)]


def test_five_puts_of_instants_in_2020_are_refused(api, broker):
    answers = flood(api, datetime(2020, 1, 1, tzinfo=UTC), {"blob": "x" * 60_000})

    assert answers == [400] * 5
    assert not ScheduledJobRun.objects.exists()
    assert broker.llen("nobody-reads-this") == 0


def test_a_user_cannot_hold_more_than_the_byte_cap_pending(api):
    answers = flood(api, timezone.now() + timedelta(days=1), {"blob": "x" * 60_000})

    # 1,000 runs of 60 KB is 60 MB, under the 64 MiB default; a second job would pass it.
    assert answers == [201, 400, 400, 400, 400]
    assert ScheduledJobRun.objects.count() == 1000


def test_the_broker_keeps_at_most_the_backlog_bound_on_a_queue_nobody_reads(api, broker, settings):
    settings.SCHEDULING_QUEUE_TARGET_MAX_BACKLOG = 300
    answers = flood(api, timezone.now() - timedelta(hours=1), {"blob": "x" * 600}, instants=200)

    for _ in range(3):
        sweep(ScheduledJobRun)

    assert answers == [201] * 5
    assert broker.llen("nobody-reads-this") == 300
    assert ScheduledJobRun.objects.filter(status="pending").count() == 700


def test_a_list_of_jobs_of_a_thousand_runs_is_small(api):
    jobs = Job.objects.bulk_create(
        Job(key=f"big-{n:02d}", callback=FLOOD, payload={"n": n}) for n in range(5)
    )
    start = timezone.now() + timedelta(days=1)
    ScheduledJobRun.objects.bulk_create(
        ScheduledJobRun(job=job, due_at=start + timedelta(minutes=m))
        for job in jobs
        for m in range(1000)
    )

    answer = api.get(f"{JOBS}?limit=1000")

    assert answer.status_code == 200
    assert len(answer.json()["results"]) == 5
    assert len(answer.content) < 10_000  # 5 jobs, 10 instants and the counts each
    assert answer.json()["results"][0]["run_counts"]["pending"] == 1000


def test_the_list_has_a_read_budget_per_user(api, settings):
    settings.SCHEDULING_JOB_LIST_THROTTLE_RATE = "3/min"

    answers = [api.get(JOBS).status_code for _ in range(4)]

    assert answers == [200, 200, 200, 429]
    assert api.get(f"{JOBS}absent/").status_code == 404  # a job's own URL is not the list
