"""The dashboard's lateness p50 and p99 come from the recorded latenesses (logarithmic bins 1%
wide and the minute's exact maximum), not from an edge of the Prometheus histogram's buckets:
a minute whose worst row was 120.8 s late read p99 300 s."""

import logging
import math
import random
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from scheduling.delivery import metrics
from scheduling.delivery.metrics import lateness, store
from scheduling.delivery.sweep.run import sweep
from tests.factories import make_due_pings
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db


def test_the_p99_of_a_late_minute_is_its_worst_row_not_a_bucket_edge(
    django_capture_on_commit_callbacks, caplog
):
    for seconds in (100, 110, 121):
        make_due_pings(1, group=str(seconds), ago=timedelta(seconds=seconds))
    with (
        caplog.at_level(logging.INFO, logger="scheduling.sweep"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        sweep(ScheduledPing)
    (batch,) = [r for r in caplog.records if r.getMessage().startswith("published")]

    (minute,) = metrics.recent_minutes(ScheduledPing._meta.label, 1, now=datetime.now(UTC))

    assert minute.published == 3
    assert minute.lateness_p99 == pytest.approx(batch.lateness_max_s, abs=0.001)
    assert minute.lateness_p50 == pytest.approx(batch.lateness_p50_s, rel=0.01)
    # What the histogram's buckets alone say of the same minute: an edge near 300 s.
    buckets = store.cumulative({"lateness:300.0": 3}, "lateness", store.LATENESS_BUCKETS)
    assert store.quantile(0.99, buckets) > 290


def test_binned_percentiles_are_within_one_percent_of_the_exact_ones():
    rng = random.Random(40)
    latenesses = [rng.lognormvariate(0, 2) for _ in range(5000)]
    bins = Counter(lateness.lateness_bin(value) for value in latenesses)
    exact = sorted(latenesses)

    for q in (0.5, 0.9, 0.99):
        nearest_rank = exact[math.ceil(q * len(exact)) - 1]
        binned = lateness.binned_quantile(q, dict(bins), max(latenesses))
        assert binned == pytest.approx(nearest_rank, rel=0.01), q
    assert lateness.binned_quantile(1.0, dict(bins), max(latenesses)) == max(latenesses)
    assert lateness.binned_quantile(0.99, {}, None) is None


def test_on_time_rows_read_zero():
    assert lateness.lateness_bin(0.0) == lateness.lateness_bin(0.0005) == 0
    assert lateness.binned_quantile(0.99, {0: 10.0}, 0.0004) == 0.0


def test_a_minute_recorded_before_the_bins_is_read_from_its_buckets():
    fields = {"lateness:5.0": 4.0, "published": 4.0}

    p50, p99 = store.minute_percentiles(fields)

    assert 2.5 < p50 <= p99 <= 5.0


def test_a_batch_counts_each_value_in_the_smallest_bucket_holding_it_an_edge_included():
    bounds = store.LATENESS_BUCKETS
    values = [
        0.0,
        0.05,
        0.050001,
        1.0,
        3600.0,
        3600.5,
        *(random.uniform(0, 4000) for _ in range(500)),
    ]

    counted = store._bucket_counts("lateness", bounds, values)

    one_by_one = Counter(
        next((f"lateness:{store.floatToGoString(b)}" for b in bounds if v <= b), "lateness:+Inf")
        for v in values
    )
    assert counted == one_by_one
    assert counted["lateness:0.05"] >= 2  # 0.0, and 0.05 itself
    assert counted["lateness:+Inf"] >= 1
