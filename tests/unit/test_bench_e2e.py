"""e2e's arithmetic: CPU per event by group, other databases' transactions (bench/e2e_report.py)."""

import pytest

from bench.e2e_report import Outcome, Snapshot, transactions_between


def test_cpu_per_event_is_each_groups_window_over_the_events():
    before = Snapshot({"handler": 10.0, "postgres": 100.0, "redis": 5.0}, {})
    after = Snapshot({"handler": 10.5, "postgres": 100.25, "redis": 5.0}, {})
    outcome = Outcome("single", 1000, 2.0, before, after, load=1.0)
    assert outcome.rate == 500
    assert outcome.per_event_us() == pytest.approx(
        {"handler": 500, "postgres": 250, "redis": 0, "total": 750}
    )


def test_other_databases_count_from_zero_when_made_anew_and_drop_out_when_dropped():
    before = {"steady": 100, "recreated": 5000, "dropped": 7}
    after = {"steady": 130, "recreated": 40, "created": 3}
    assert transactions_between(before, after) == 30 + 40 + 3
