"""release: release day. N pre-order emails fall due at once; a mail provider accepts R a second
and goes away for T seconds in the middle; real workers send through it over SMTP.

The provider is bench/fake_smtp.py in its own process: over its budget it answers slowly (a
tarpit), and once half the emails are in it closes its listening socket for the outage. Two
prefork workers' pools (`-Q purchases`) send with Django's SMTP backend; `manage.py sweep --loop`
publishes with the model's limit at R (SCHEDULING_RATE_LIMITS). Printed while it runs: emails
sent, their rate, rows pending and failed; at the end: emails sent and duplicates (counted by
the provider), rows left for a person (`failed`) and still pending, the time to drain against
N / R, the publish rate per second (p99, max), the CPU of the workers, the sweeper and the
provider, and the load average. Then the naive way, short: no limit and a provider with no
budget, to count what it would have been offered over R in a second.

Sizes (env overrides, for CI's smoke test): BENCH_RELEASE_ROWS (1,000,000; quick 3,000),
BENCH_RELEASE_RATE (500), BENCH_RELEASE_OUTAGE (60 s; quick 5), BENCH_RELEASE_NAIVE_ROWS
(20 s of R, at most N; 0 skips the naive leg), BENCH_RELEASE_CONCURRENCY (4 a worker);
BENCH_RELEASE_WORKER_LOG (warning) is the workers' log level (.run/bench-release-*.log).
"""

import os
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import redis
from django.conf import settings

from bench.common import broker, sql
from bench.cpu import cpu_seconds
from bench.drain import make_rows
from bench.release_plan import Plan
from bench.release_report import (
    Leg,
    ProviderStats,
    RowCounts,
    drain_seconds,
    publish_per_second,
    report_limited,
    report_naive,
    row_counts,
)
from purchases.models import ScheduledPurchase
from scheduling.rows.registry import scheduled_models

ROOT = Path(__file__).resolve().parent.parent
MODEL = "purchases.ScheduledPurchase"
SEEDED_PER_SECOND = 40_000  # rows make_rows writes (with its VACUUM) a second, about
WORKERS = 2  # worker processes, each with its prefork pool
# A failed try waits 0.5-1 s, doubling to at most 5 s: retries after the outage end in the run.
RETRY_BACKOFF, RETRY_BACKOFF_MAX = "1", "5"
SETTLE_POLLS = 2  # the run is over when the rows' counts are settled and unchanged this often
STALL_SECONDS = 60  # ... or when nothing moved for this long (plus the outage)


def plan_for(quick: bool) -> Plan:
    rows = env_int("BENCH_RELEASE_ROWS", 3_000 if quick else 1_000_000)
    rate = env_int("BENCH_RELEASE_RATE", 500)
    return Plan(
        rows=rows,
        rate=rate,
        outage=float(env_int("BENCH_RELEASE_OUTAGE", 5 if quick else 60)),
        naive_rows=env_int("BENCH_RELEASE_NAIVE_ROWS", min(rows, 20 * rate)),
        concurrency=env_int("BENCH_RELEASE_CONCURRENCY", 4),
        progress_every=2.0 if quick else 5.0,
        lead=5.0 if quick else 10.0,
    )


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    if not raw.isdigit():
        raise SystemExit(f"{name}={raw!r}: expected a whole number >= 0")
    return int(raw)


def run_release(*, quick: bool) -> None:
    plan = plan_for(quick)
    print(
        f"release: {plan.rows:,} pre-order emails due at once; a provider accepting {plan.rate:,}"
        f"/s, away {plan.outage:g} s once half are in; {WORKERS} workers x {plan.concurrency},"
        f" sweep --loop limited to {plan.rate:,}/s"
    )
    report_limited(plan, run_leg(plan, limited=True))
    if plan.naive_rows:
        naive = replace(plan, rows=plan.naive_rows, outage=0.0)
        print(
            f"release, the naive way: {naive.rows:,} emails due at once, no rate limit,"
            " a provider with no budget (what it would be offered)"
        )
        report_naive(naive, run_leg(naive, limited=False))


def run_leg(plan: Plan, *, limited: bool) -> Leg:
    release_at = seed(plan.rows, plan.lead)
    stats = settings.RUN_DIR / "bench-release-smtp.json"
    stats.unlink(missing_ok=True)
    port = free_port()
    provider = start_provider(port, plan, limited=limited, stats=stats)
    env = process_env(port, plan, limited=limited)
    workers = [start_worker(env, plan.concurrency, n) for n in range(WORKERS)]
    sweeper = start_logged([sys.executable, "manage.py", "sweep", "--loop", MODEL], env, "sweeper")
    parts = {"workers": workers, "sweeper": [sweeper], "provider": [provider]}
    try:
        time.sleep(max(0.0, release_at - time.time()))
        load_before, cpu_before = os.getloadavg()[0], cpu_of(parts)
        counts = watch(plan, stats, release_at)
        cpu = {name: seconds - cpu_before[name] for name, seconds in cpu_of(parts).items()}
        load_after = os.getloadavg()[0]
    finally:
        stop([*workers, sweeper])  # before the provider: an email being sent ends as it would
        stop([provider])
    provider_stats = ProviderStats.read(stats)
    return Leg(
        rows=plan.rows,
        counts=counts,
        provider=provider_stats,
        seconds=drain_seconds(release_at),
        first_email=(provider_stats.first_accepted or float("nan")) - release_at,
        per_second=publish_per_second(),
        cpu=cpu,
        load=(load_before, load_after),
    )


def seed(rows: int, lead: float) -> float:
    """`rows` paid pre-orders with their pending email, all due at one instant (returned, Unix
    time); no other scheduled row, history or message."""
    others = [
        "scheduling_event_history",
        *(m._meta.db_table for m in scheduled_models() if m is not ScheduledPurchase),
    ]
    sql(f"TRUNCATE {', '.join(others)} CASCADE")
    make_rows(rows, due_in=f"{lead + rows / SEEDED_PER_SECOND} seconds", spread="0 seconds")
    broker().flushdb()
    # The limit in force is the environment's: no operator's override, no bucket left over.
    redis.Redis.from_url(settings.REDIS_URL).flushdb()
    due = ScheduledPurchase.objects.order_by("due_at").values_list("due_at", flat=True)[0]
    return due.timestamp()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_provider(port: int, plan: Plan, *, limited: bool, stats: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "bench.fake_smtp", "--port", str(port), "--stats", str(stats)]
    command += ["--rate", str(plan.rate if limited else 0)]
    command += ["--outage-at", str(plan.rows // 2), "--outage", str(plan.outage)]
    provider = start_logged(command, dict(os.environ), "provider")
    deadline = time.monotonic() + 30
    while not stats.exists():  # written once it listens
        if provider.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the fake SMTP server did not start: see .run/bench-release-*")
        time.sleep(0.1)
    return provider


def process_env(port: int, plan: Plan, *, limited: bool) -> dict[str, str]:
    env = {
        **os.environ,
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": str(port),
        "SCHEDULING_RETRY_BACKOFF": RETRY_BACKOFF,
        "SCHEDULING_RETRY_BACKOFF_MAX": RETRY_BACKOFF_MAX,
        "LOG_LEVEL": "WARNING",
    }
    env.pop("SCHEDULING_RATE_LIMITS", None)
    if limited:
        env["SCHEDULING_RATE_LIMITS"] = f"{MODEL}={plan.rate}/s"
    return env


def start_worker(env: dict[str, str], concurrency: int, n: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "celery", "-A", "project", "worker", "-Q", "purchases"]
    command += ["-P", "prefork", "-c", str(concurrency), "-n", f"release{n}@%h"]
    command += ["-l", os.environ.get("BENCH_RELEASE_WORKER_LOG", "warning")]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    return start_logged(command, env, f"worker{n}")


def start_logged(command: list[str], env: dict[str, str], name: str) -> subprocess.Popen[bytes]:
    """`command` from the project's root; its output goes to .run/bench-release-<name>.log."""
    settings.RUN_DIR.mkdir(parents=True, exist_ok=True)
    with open(settings.RUN_DIR / f"bench-release-{name}.log", "wb") as log:
        return subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=log)


def cpu_of(parts: dict[str, list[subprocess.Popen[bytes]]]) -> dict[str, float]:
    """User + system CPU seconds of each part's processes and their children (/proc)."""
    return {name: cpu_seconds([p.pid for p in processes]) for name, processes in parts.items()}


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def watch(plan: Plan, stats: Path, release_at: float) -> RowCounts:
    """Print progress every few seconds until every row is settled (sent, failed, or out of
    the sweep's hands) and stays so, or nothing moves for a while; the last counts."""
    last, steady, sent_before, moved = row_counts(), 0, 0, time.monotonic()
    patience = STALL_SECONDS + plan.outage
    while steady < SETTLE_POLLS:
        time.sleep(plan.progress_every)
        counts, sent = row_counts(), ProviderStats.read(stats).accepted
        print_progress(time.time() - release_at, sent, sent_before, plan.progress_every, counts)
        if counts != last or sent != sent_before:
            moved = time.monotonic()
        elif time.monotonic() - moved > patience:
            print(f"  nothing moved for {patience:g} s: the figures as they stand")
            break
        steady = steady + 1 if counts.settled and counts == last else 0
        last, sent_before = counts, sent
    return last


def print_progress(elapsed: float, sent: int, before: int, every: float, rows: RowCounts) -> None:
    print(
        f"  {elapsed:7.1f} s  sent {sent:>9,} ({(sent - before) / every:6,.0f}/s)"
        f"  pending {rows.pending:>9,}  published {rows.in_flight:>7,}  failed {rows.failed:>7,}",
        flush=True,
    )
