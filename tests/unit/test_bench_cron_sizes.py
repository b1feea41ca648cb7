"""cron_scale's sizes and layouts, read from the environment."""

import pytest

from bench.cron_layout import database_of
from bench.cron_settings import INSTALLED_APPS as SWEEPER_APPS
from bench.cron_sizes import burst_sweepers, layout, quick_or_full, sweeper_env

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


def test_the_windows_sweepers_tick_every_5_s_hold_and_nap_up_to_a_second_on_the_projects_models():
    env = sweeper_env(quick_or_full(True, {}))
    assert env == {
        "DJANGO_SETTINGS_MODULE": "bench.cron_settings",
        "SCHEDULING_SWEEP_INTERVAL": "5.0",
        "SCHEDULING_SWEEP_HOLD_NAP": "1.0",
    }
    assert quick_or_full(True, {}).hold == 4.9
    assert "bench.noop" not in SWEEPER_APPS
    assert {"purchases", "trainings"} <= set(SWEEPER_APPS)


def test_the_windows_sweep_settings_come_from_the_environment_or_are_refused_by_name():
    sizes = quick_or_full(False, {"BENCH_CRON_HOLD": "0.9", "BENCH_CRON_INTERVAL": "1"})
    assert (sizes.hold, sizes.interval, sizes.hold_nap) == (0.9, 1.0, 1.0)
    with pytest.raises(SystemExit, match=r"BENCH_CRON_HOLD_NAP must be a number of seconds"):
        quick_or_full(False, {"BENCH_CRON_HOLD_NAP": "soon"})
