"""The release scenario's figures: what the database and the fake provider say once a leg is
over, printed beside what they are measured against (N / R, the limit R)."""

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import connection
from django.db.models import Count, Q

from bench.common import record
from bench.fake_smtp import Counts
from bench.lateness import percentile
from bench.release_plan import Plan
from purchases.models import ScheduledPurchase
from scheduling.rows.states import Status

SETTLED = (Status.FAILED, Status.EXPIRED, Status.CANCELLED)  # out of the sweep's hands


@dataclass(frozen=True)
class RowCounts:
    total: int
    handled: int  # the email went out (handled_at set)
    pending: int
    failed: int  # left for a person
    other_done: int  # expired or cancelled

    @property
    def in_flight(self) -> int:
        """Published and not yet handled (or in any state of handling the others are not)."""
        return self.total - self.handled - self.pending - self.failed - self.other_done

    @property
    def settled(self) -> bool:
        return self.pending == 0 and self.in_flight == 0


def row_counts() -> RowCounts:
    handled = Q(handled_at__isnull=False)
    counts = ScheduledPurchase.objects.aggregate(
        total=Count("pk"),
        handled=Count("pk", filter=handled),
        pending=Count("pk", filter=Q(status=Status.PENDING) & ~handled),
        failed=Count("pk", filter=Q(status=Status.FAILED) & ~handled),
        other_done=Count("pk", filter=Q(status__in=SETTLED[1:]) & ~handled),
    )
    return RowCounts(**counts)


class ProviderStats(Counts):
    """What the fake provider counted, read back from its stats file."""

    @classmethod
    def read(cls, path: Path) -> "ProviderStats":
        try:
            raw: dict[str, Any] = json.loads(path.read_text())
        except (OSError, ValueError):  # not written yet
            return cls()
        for name in ("offered_per_second", "accepted_per_second"):
            raw[name] = Counter({int(second): n for second, n in raw[name].items()})
        return cls(**raw)

    @property
    def outage(self) -> float:
        if self.outage_began is None or self.outage_ended is None:
            return 0.0
        return self.outage_ended - self.outage_began

    def offered(self) -> list[int]:
        """Messages offered in each second from the first to the last (none: 0)."""
        return filled(self.offered_per_second)


@dataclass(frozen=True)
class Leg:
    rows: int
    counts: RowCounts
    provider: ProviderStats
    seconds: float  # from the release until the last row settled
    first_email: float  # seconds from the release to the first email accepted
    per_second: list[int]  # rows published in each second, first to last
    cpu: dict[str, float]  # CPU seconds by part
    load: tuple[float, float]  # the machine's 1-minute load average before and after


def filled(per_second: dict[int, int]) -> list[int]:
    if not per_second:
        return []
    return [per_second.get(s, 0) for s in range(min(per_second), max(per_second) + 1)]


def publish_per_second() -> list[int]:
    """Rows published in each second (their `delivered_at`, the last publication of a retried
    row), from the first second to the last."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT floor(extract(epoch FROM delivered_at))::bigint, count(*)"
            " FROM scheduled_purchase WHERE delivered_at IS NOT NULL GROUP BY 1"
        )
        return filled(dict(cursor.fetchall()))


def drain_seconds(release_at: float) -> float:
    """From the release until the last row was handled or left for a person."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT extract(epoch FROM max(coalesce(handled_at, updated_at)))"
            " FROM scheduled_purchase WHERE handled_at IS NOT NULL OR status = ANY(%s)",
            [list(SETTLED)],
        )
        (last,) = cursor.fetchone()
    return float(last) - release_at if last is not None else float("nan")


def report_limited(plan: Plan, leg: Leg) -> None:
    counts, provider = leg.counts, leg.provider
    figure("emails sent (counted by the provider)", provider.accepted, "emails")
    figure("duplicates (a download link twice)", provider.duplicates, "emails")
    if provider.without_link:
        figure("emails without a download link", provider.without_link, "emails")
    figure("rows left for a person (failed)", counts.failed, "rows")
    figure("rows still pending", counts.pending, "rows")
    figure("rows published, not handled, at the end", counts.in_flight, "rows")
    accounted = provider.accepted - provider.duplicates + counts.failed + counts.pending
    figure("sent + failed + pending", accounted, "rows", expected=leg.rows)
    figure("provider away (connections refused)", provider.outage, "s")
    figure("time to drain", leg.seconds, "s", ideal=plan.ideal)
    figure(f"  ideal: {leg.rows:,} / {plan.rate:,}/s", plan.ideal, "s")
    figure("  time to drain / ideal", leg.seconds / plan.ideal, "x")
    report_pace(leg)
    report_rates(plan, leg)
    report_cost(leg)


def report_pace(leg: Leg, prefix: str = "") -> None:
    """How soon the workers began, and their pace once they had."""
    figure(f"{prefix}first email, after the release", leg.first_email, "s")
    # From the first email to the last row settled, less the outage.
    sending = leg.seconds - leg.first_email - leg.provider.outage
    pace = leg.provider.accepted / sending
    figure(f"{prefix}emails a second while sending", pace, "/s")


def report_rates(plan: Plan, leg: Leg) -> None:
    published = sorted(map(float, leg.per_second))
    offered = sorted(map(float, leg.provider.offered()))
    figure(f"published a second, p99 (limit {plan.rate:,})", percentile(published, 0.99), "rows/s")
    figure("published a second, max", max(published, default=0), "rows/s")
    figure("offered to the provider a second, p99", percentile(offered, 0.99), "emails/s")
    figure("offered to the provider a second, max", max(offered, default=0), "emails/s")
    figure("held by the provider (over its budget)", leg.provider.held, "emails")


def report_cost(leg: Leg, prefix: str = "") -> None:
    for part, seconds in leg.cpu.items():
        figure(f"{prefix}CPU: {part}", seconds, "s", share_of_a_core=seconds / leg.seconds)
    total = sum(leg.cpu.values())
    figure(f"{prefix}CPU: all three, % of one core", 100 * total / leg.seconds, "%")
    figure(f"{prefix}CPU: all three, per 1,000 rows", 1000 * total / leg.rows, "s")
    figure(f"{prefix}load average (1 min) at the release", leg.load[0], "")
    figure(f"{prefix}load average (1 min) at the end", leg.load[1], "")


def report_naive(plan: Plan, leg: Leg) -> None:
    offered = leg.provider.offered()
    over = [n - plan.rate for n in offered if n > plan.rate]
    figure("naive: emails sent", leg.provider.accepted, "emails", expected=leg.rows)
    figure("naive: published a second, max", max(leg.per_second, default=0), "rows/s")
    figure("naive: offered to the provider a second, max", max(offered, default=0), "emails/s")
    figure(
        "naive: offered a second, p99", percentile(sorted(map(float, offered)), 0.99), "emails/s"
    )
    figure(f"naive: seconds over the provider's {plan.rate:,}/s", len(over), "s")
    figure("naive: emails over it (would be refused)", sum(over), "emails")
    figure("naive: time to drain", leg.seconds, "s", ideal=plan.ideal)
    report_pace(leg, prefix="naive: ")
    report_cost(leg, prefix="naive: ")


def figure(name: str, value: float, unit: str, **extra: object) -> None:
    record("release", name, value, unit, **extra)
