"""Benchmark: what the delivery pause costs the sweep when nothing is paused.

    python -m bench.pause_read [--rounds 2000]

Printed, each the median (and 99th percentile) over its rounds: the pause lookup a sweep makes
before its lock (`is_paused`: one EXISTS on the unique index), the read of every pause a daemon
tick makes once for all its models (`paused_labels`), an idle sweep of one model (nothing due:
the lookup, the lock, the probe, the heartbeat), and the same sweep inside a tick's one read
(`pauses_read_once`: the lookup answered from memory). The idle sweep's two figures differ by
what the lookup adds to each beat-driven sweep.

Runs against a scratch database that Django's test machinery creates next to the configured one
(its name prefixed with "test_") and drops at the end; the configured database is never written.
The sweep's lock is in process and nothing is due, so no broker is needed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

from bench.scratch import on_scratch_database


def timed(step: Callable[[], object], rounds: int) -> tuple[float, float]:
    """Median and 99th percentile of `step`, in microseconds."""
    seconds = []
    for _ in range(rounds):
        started = time.perf_counter()
        step()
        seconds.append(time.perf_counter() - started)
    cuts = statistics.quantiles(seconds, n=100)
    return statistics.median(seconds) * 1e6, cuts[98] * 1e6


def run(rounds: int) -> None:
    from scheduling.delivery.pauses.services import is_paused, paused_labels, pauses_read_once
    from scheduling.delivery.publishing.memory import MemoryPublisher
    from scheduling.delivery.sweep.run import sweep
    from scheduling.delivery.testing import in_process_lock
    from scheduling.rows.registry import get_scheduled_model

    model = get_scheduled_model("purchases.ScheduledPurchase")
    lock, publisher = in_process_lock(model), MemoryPublisher()

    def idle_sweep() -> None:
        sweep(model, lock=lock, publisher=publisher)

    def idle_sweep_in_a_tick() -> None:
        with pauses_read_once():
            sweep(model, lock=lock, publisher=publisher)

    figures = {
        "pause lookup (is_paused)": timed(lambda: is_paused(model), rounds),
        "every pause (paused_labels)": timed(paused_labels, rounds),
        "idle sweep, its own lookup": timed(idle_sweep, rounds),
        "idle sweep, the tick's read": timed(idle_sweep_in_a_tick, rounds),
    }
    print(f"{rounds} rounds each, nothing paused; microseconds")
    for name, (median, p99) in figures.items():
        print(f"  {name:<30} median {median:8.0f}   p99 {p99:8.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_pause_read")
    on_scratch_database(lambda: run(args.rounds))


if __name__ == "__main__":
    main()
