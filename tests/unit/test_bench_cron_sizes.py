"""cron_scale's sizes and layouts, read from the environment."""

import pytest

from bench.cron_layout import database_of
from bench.cron_sizes import burst_sweepers, layout, quick_or_full

URL = "postgres://postgres@127.0.0.1:5432/scheduling_bench"


def test_full_size_is_the_distributed_crons():
    sizes = quick_or_full(True, {})
    assert (sizes.schedules, sizes.burst, sizes.rate) == (30_000_000, 1_500_000, 1200)
    assert sizes.rest == 30_000_000 - 1200 * sizes.seconds - 1_500_000


def test_quick_size_takes_the_environments_counts():
    env = {"BENCH_CRON_SCHEDULES": "400_000", "BENCH_CRON_BURST": "20,000", "BENCH_CRON_CHURN": ""}
    sizes = quick_or_full(False, env)
    assert (sizes.schedules, sizes.burst, sizes.churn) == (400_000, 20_000, 30_000)


@pytest.mark.parametrize("raw", ["many", "-5", "1e6"])
def test_a_bad_count_is_refused_by_its_name(raw):
    with pytest.raises(SystemExit, match=r"BENCH_CRON_BURST must be a whole number"):
        quick_or_full(False, {"BENCH_CRON_BURST": raw})


def test_schedules_must_exceed_what_fires_and_churns():
    with pytest.raises(SystemExit, match=r"BENCH_CRON_SCHEDULES \(60,000\) must exceed"):
        quick_or_full(False, {"BENCH_CRON_SCHEDULES": "60000"})


def test_layout_is_one_of_three():
    assert layout({}) == "plain"
    assert layout({"BENCH_CRON_LAYOUT": "both"}) == "both"
    with pytest.raises(SystemExit, match="BENCH_CRON_LAYOUT must be one of plain, partitioned"):
        layout({"BENCH_CRON_LAYOUT": "sharded"})


def test_each_layout_has_a_database_of_its_own():
    partitioned = database_of("partitioned", URL)
    assert partitioned == URL + "_partitioned"
    assert database_of("partitioned", partitioned) == partitioned
    assert database_of("plain", partitioned) == URL


def test_the_bursts_sweepers_are_celery_or_daemons():
    assert burst_sweepers({}) == "celery"
    assert burst_sweepers({"BENCH_CRON_BURST_SWEEPERS": "daemons"}) == "daemons"
    with pytest.raises(
        SystemExit, match="BENCH_CRON_BURST_SWEEPERS must be one of celery, daemons"
    ):
        burst_sweepers({"BENCH_CRON_BURST_SWEEPERS": "threads"})
