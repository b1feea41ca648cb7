"""e2e's figures: each variant's rate, its ratio to plain Celery, its CPU per event by process
group, recorded (bench/results.jsonl) and printed as one table at the end."""

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.db import connection

from bench.common import broker, record
from bench.cpu import postgres_seconds, process_table, redis_seconds, tree_cpu

GROUPS = ("handler", "sweeper", "beat", "postgres", "redis")


@dataclass(frozen=True)
class Snapshot:
    """CPU seconds so far of each process group, and of other databases' transactions."""

    cpu: dict[str, float]
    others: dict[str, int]

    @classmethod
    def take(cls, roots: Mapping[str, int]) -> "Snapshot":
        """The process trees under `roots` (name: pid), PostgreSQL and Redis, read now."""
        table = process_table()
        trees = {name: tree_cpu(table, pid) for name, pid in roots.items()}
        cpu = {**trees, "postgres": postgres_seconds(), "redis": redis_seconds(broker())}
        return cls(cpu, other_transactions())


@dataclass(frozen=True)
class Outcome:
    variant: str
    events: int
    seconds: float  # from the first event handled to the last
    before: Snapshot  # the window over which CPU is counted
    after: Snapshot
    counts: dict[str, float] = field(default_factory=dict)  # the variant's own, e.g. emails
    load: float = field(default_factory=lambda: os.getloadavg()[0])

    @property
    def cpu(self) -> dict[str, float]:
        return {name: self.after.cpu[name] - self.before.cpu[name] for name in self.after.cpu}

    @property
    def others(self) -> int:
        """Transactions other databases ran in the window: their CPU is in PostgreSQL's."""
        return transactions_between(self.before.others, self.after.others)

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else math.nan

    def per_event_us(self) -> dict[str, float]:
        """µs of CPU per event of each group that ran (plain Celery has no sweeper nor beat)."""
        per_event = {g: self.cpu[g] / self.events * 1e6 for g in GROUPS if g in self.cpu}
        return {**per_event, "total": sum(per_event.values())} if self.events else {}


def other_transactions() -> dict[str, int]:
    """Transactions so far of every database but this one, by name."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT datname, xact_commit + xact_rollback FROM pg_stat_database"
            " WHERE datname <> current_database()"
        )
        return {name: int(count) for name, count in cursor.fetchall()}


def transactions_between(before: Mapping[str, int], after: Mapping[str, int]) -> int:
    """Transactions run between two other_transactions(): a database dropped meanwhile is left
    out, one created anew (a test session's, under the same name) counts from zero."""
    return sum(
        n - before.get(name, 0) if n >= before.get(name, 0) else n for name, n in after.items()
    )


def report(outcomes: list[Outcome]) -> None:
    plain = outcomes[0].rate
    for outcome in outcomes:
        record_outcome(outcome, plain)
    print_table(outcomes, plain)


def record_outcome(outcome: Outcome, plain: float) -> None:
    name, extra = outcome.variant, {"events": outcome.events, "load": round(outcome.load, 2)}
    record("e2e", f"{name}: events/s", outcome.rate, "events/s", **extra)
    record("e2e", f"{name}: ratio to plain Celery", outcome.rate / plain, "x", **extra)
    for group, us in outcome.per_event_us().items():
        record("e2e", f"{name}: CPU per event, {group}", us, "µs", **extra)
    for figure, count in outcome.counts.items():
        record("e2e", f"{name}: {figure}", count, "", **extra)
    if outcome.others:
        print(
            f"  e2e         {name}: other databases ran {outcome.others:,} transactions meanwhile"
        )


def print_table(outcomes: list[Outcome], plain: float) -> None:
    columns = (*GROUPS, "total")
    print()
    print(f"  {'variant':<10} {'events':>6} {'events/s':>9} {'x plain':>7}  µs CPU per event:")
    print(f"  {'':<37}" + "".join(f"{c:>9}" for c in columns) + f"{'load':>6}")
    for outcome in outcomes:
        us = outcome.per_event_us()
        cells = "".join(f"{us[c]:>9,.0f}" if c in us else f"{'-':>9}" for c in columns)
        print(
            f"  {outcome.variant:<10} {outcome.events:>6,} {outcome.rate:>9,.0f}"
            f" {outcome.rate / plain:>7.2f}  {cells}{outcome.load:>6.1f}"
        )
