"""The dashboard's lateness percentiles from the recorded latenesses, not from an edge of the
Prometheus histogram's buckets (LATENESS_BUCKETS, whose edges read p99 300 s for a minute whose
worst row was 120.8 s late): per minute, each lateness is counted in a logarithmic bin
LATENESS_PRECISION wide (relative, as DDSketch does), and the minute's exact maximum is kept; a
percentile is its bin's middle, within that precision, and never past the maximum."""

from __future__ import annotations

import math

LATENESS_PRECISION = 0.01
LATENESS_GROWTH = (1 + LATENESS_PRECISION) / (1 - LATENESS_PRECISION)  # one bin to the next
LATENESS_FLOOR = 0.001  # seconds; a row this close to its time counts in bin 0 (on time)


def lateness_bin(seconds: float) -> int:
    """0 up to LATENESS_FLOOR; then bin n holds (FLOOR * GROWTH**(n-1), FLOOR * GROWTH**n]."""
    if seconds <= LATENESS_FLOOR:
        return 0
    return max(math.ceil(math.log(seconds / LATENESS_FLOOR, LATENESS_GROWTH) - 1e-9), 1)


def bin_middle(number: int) -> float:
    """The value within LATENESS_PRECISION (relative) of every lateness of bin `number`."""
    if number == 0:
        return 0.0
    return LATENESS_FLOOR * 2 * LATENESS_GROWTH**number / (LATENESS_GROWTH + 1)


def binned_quantile(q: float, bins: dict[int, float], most: float | None) -> float | None:
    """The nearest-rank quantile of the binned latenesses (None without any), at most `most`
    (the exact maximum recorded with them)."""
    total = sum(bins.values())
    if not total:
        return None
    rank, seen = max(math.ceil(q * total - 1e-9), 1), 0.0
    for number in sorted(bins):
        seen += bins[number]
        if seen >= rank:
            break
    value = bin_middle(number)
    return value if most is None else min(value, most)
