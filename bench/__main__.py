"""python -m bench [scenario ...] [--quick]

Scenarios: drain, lateness, history (a burst handled by real workers, once as is and once with
10% of it failing once: events/s end to end, history entries per event), scale, reschedule
(runs after scale), create, memory, purge, metrics, curves, cron_scale (the distributed cron's
30M schedules: a steady window, a midnight burst, a day of churn and its purge; BENCH_CRON_LAYOUT
plain, partitioned or both), release (a million pre-order emails
through a fake SMTP provider at 500/s with an outage; about 40 minutes), e2e (events handled a
second end to end beside plain Celery's no-op tasks on the same `-c 2` worker, with CPU per event
by process), hostile (issue #37's bounded calendars and history pages), jobs (issue #40: a list
of 100 jobs of 1,000 runs, five flooding PUTs), fairness (one batch's claim over due rows
spread over keys, with and without a fairness_key; --rows and --keys set the backlog, e.g.
--rows 1000000 --keys 10000); `all` (the default) runs them in that order; `chart` draws docs/benchmarks.png from bench/results.jsonl.
Runs on its own database (scheduling_bench) and a free pair of Redis databases (claimed as test
sessions claim theirs), never on development data. Each figure is printed beside its anchor and
appended to bench/results.jsonl.
"""

import argparse
import os
import sys
from collections.abc import Callable

FULL = {
    "drain": 1_000_000,
    "history": 100_000,
    "rate": 1000,
    "seconds": 60,
    "small": 10_000,
    "large": 10_000_000,
    "create": 100_000,
    "memory": 1_000_000,
    "purge_table": 10_000_000,
    "purge_done": 1_000_000,
    "metrics": 10_000_000,
    "create_seconds": 20,
    "reschedule_sample": 2000,
    "curves_backlog": 20_000,
    "e2e": 5000,
    "hostile_history": 20_000,
    "fairness_rows": 100_000,
    "fairness_keys": 1000,
}
QUICK = {
    "drain": 20_000,
    "history": 5_000,
    "rate": 200,
    "seconds": 10,
    "small": 10_000,
    "large": 100_000,
    "create": 10_000,
    "memory": 50_000,
    "purge_table": 200_000,
    "purge_done": 20_000,
    "metrics": 100_000,
    "create_seconds": 5,
    "reschedule_sample": 200,
    "curves_backlog": 5_000,
    "e2e": 1000,
    "hostile_history": 20_000,
    "fairness_rows": 20_000,
    "fairness_keys": 200,
}
SCENARIOS = [
    "drain",
    "lateness",
    "history",
    "scale",
    "reschedule",
    "create",
    "memory",
    "purge",
    "metrics",
    "curves",
    "cron_scale",
    "release",
    "e2e",
    "hostile",
    "jobs",
    "fairness",
]


def configure() -> None:
    from bench.common import claim_redis_pair

    # cron_scale's partitioned layout has a database of its own (bench/cron_layout.py).
    name = "scheduling_bench"
    if os.environ.get("BENCH_CRON_LAYOUT") == "partitioned":
        name += "_partitioned"
    os.environ.setdefault("DATABASE_URL", f"postgres://postgres@127.0.0.1:5432/{name}")
    claim_redis_pair()  # a free pair of Redis databases, as test sessions claim theirs
    # The project's settings plus the plain endpoint the create scenario compares with.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # Production's mode: DEBUG on records every query and wraps every cursor. Every process the
    # scenarios start (gunicorn, celery) inherits it. Plain HTTP on the loopback: no redirect.
    os.environ.setdefault("DEBUG", "0")
    os.environ.setdefault("SECRET_KEY", "bench-" * 8)
    os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
    # One client stands for many users: cron_scale creates 5,000 schedules a minute with one
    # token, which the per-user budget for schedule writes (60 a minute) would refuse.
    os.environ.setdefault("SCHEDULING_SCHEDULE_WRITE_THROTTLE_RATE", "100000/min")


def scale_then_reschedule(sizes: dict[str, int]) -> None:
    from bench.reschedule import run_reschedule
    from bench.scale import run_scale

    run_scale(sizes["small"], sizes["large"])  # reschedule works on the large table scale leaves
    run_reschedule(sizes["reschedule_sample"])


def runners(sizes: dict[str, int]) -> dict[str, Callable[[], None]]:
    from bench.create import run_create
    from bench.cron_scale import run_cron_scale
    from bench.cron_sizes import quick_or_full
    from bench.curves import run_curves
    from bench.drain import run_drain
    from bench.e2e import run_e2e
    from bench.history import run_history
    from bench.hostile import run_hostile
    from bench.jobs import run_jobs
    from bench.lateness import run_lateness
    from bench.memory import run_memory
    from bench.metrics import run_metrics
    from bench.purge import run_purge
    from bench.release import run_release
    from bench.scale import run_scale

    return {
        "drain": lambda: run_drain(sizes["drain"]),
        "lateness": lambda: run_lateness(sizes["rate"], sizes["seconds"]),
        "history": lambda: run_history(sizes["history"]),
        "scale": lambda: run_scale(sizes["small"], sizes["large"]),
        "reschedule": lambda: scale_then_reschedule(sizes),
        "create": lambda: run_create(sizes["create"], sizes["create_seconds"]),
        "memory": lambda: run_memory(sizes["small"], sizes["memory"]),
        "purge": lambda: run_purge(
            sizes["purge_table"], sizes["purge_done"], sizes["rate"], sizes["seconds"]
        ),
        "metrics": lambda: run_metrics(sizes["metrics"]),
        "curves": lambda: run_curves(
            [n for n in (10_000, 100_000, 1_000_000, 10_000_000) if n <= sizes["large"]],
            sizes["curves_backlog"],
            sizes["rate"],
        ),
        "cron_scale": lambda: run_cron_scale(quick_or_full(sizes is FULL), full=sizes is FULL),
        "release": lambda: run_release(quick=sizes is QUICK),
        "e2e": lambda: run_e2e(sizes["e2e"]),
        "hostile": lambda: run_hostile(sizes["hostile_history"]),
        "jobs": run_jobs,
    }


def fairness_runner(rows: int, keys: int) -> Callable[[], None]:
    from bench.fairness import run_fairness

    return lambda: run_fairness(rows, keys)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    known = [*SCENARIOS, "all", "chart"]
    parser.add_argument("scenarios", nargs="*", help=f"any of: {', '.join(known)}")
    parser.add_argument("--quick", action="store_true", help="small sizes (what CI runs)")
    parser.add_argument("--rows", type=int, help="fairness: due rows (default 100,000)")
    parser.add_argument("--keys", type=int, help="fairness: keys they spread over (default 1,000)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.scenarios) - set(known))
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    if "chart" in args.scenarios:
        from bench.chart import draw

        draw()
        return
    configure()
    from bench.database import prepare_database

    prepare_database()
    chosen = SCENARIOS if not args.scenarios or "all" in args.scenarios else args.scenarios
    if "scale" in chosen and "reschedule" in chosen:
        chosen = [name for name in chosen if name != "scale"]  # reschedule runs scale first
    sizes = QUICK if args.quick else FULL
    fairness = (args.rows or sizes["fairness_rows"], args.keys or sizes["fairness_keys"])
    available = {**runners(sizes), "fairness": fairness_runner(*fairness)}
    for name in chosen:
        available[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
