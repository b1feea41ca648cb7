"""Rate limits: the budget's arithmetic, the setting and the model's own limit, their checks."""

import time

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from project.env import env_mapping
from scheduling.delivery.checks import check_rate_limits
from scheduling.delivery.locks import LocalSweepLock
from scheduling.delivery.ratelimit import (
    Grant,
    LocalBudget,
    Pace,
    events_per_second,
    give_back,
    take,
)
from scheduling.delivery.sweep.loop import Drain
from scheduling.delivery.sweep.results import BatchResult, SweepResult
from scheduling.rows.conf import scheduling_settings
from tests.testapp.models import ScheduledPing

LABEL = "testapp.ScheduledPing"


@pytest.mark.parametrize(
    ("rate", "per_second"),
    [("500/s", 500.0), ("10/m", 10 / 60), ("90/min", 1.5), ("7200/hour", 2.0), ("86400/d", 1.0)],
)
def test_a_rate_reads_as_events_per_second(rate, per_second):
    assert events_per_second(rate) == pytest.approx(per_second)


def test_a_burst_is_a_tenth_of_a_seconds_worth_and_at_least_one_row():
    assert Pace(200).burst == 20
    assert Pace(500).burst == 50
    assert Pace(10 / 60).burst == 1


def test_a_fresh_budget_grants_one_burst_then_makes_the_next_wait_for_a_whole_one():
    pace = Pace(200)  # an event every 5 ms, bursts of 20

    first, tat = take(pace, tat=0.0, now=100.0, want=1000)
    second, same_tat = take(pace, tat, now=100.0, want=1000)
    early, _ = take(pace, tat, now=100.05, want=1000)  # 10 rows' worth built up: not a batch

    assert first == Grant(20)
    assert second.rows == 0
    assert second.wait == pytest.approx(0.1)
    assert same_tat == tat
    assert early.rows == 0
    assert early.wait == pytest.approx(0.05)
    third, _ = take(pace, tat, now=100.0 + second.wait, want=1000)
    assert third == Grant(20)


def test_a_request_smaller_than_a_burst_is_granted_whole():
    grant, _ = take(Pace(200), tat=0.0, now=5.0, want=3)
    assert grant == Grant(3)


def test_a_budget_used_as_fast_as_it_allows_holds_the_rate_plus_one_burst_over_any_second():
    pace, now, tat = Pace(200), 1000.0, 0.0
    grants: list[tuple[float, int]] = []
    while now < 1010.0:  # ten seconds of a sweeper that waits exactly as long as it is told
        grant, tat = take(pace, tat, now, want=1000)
        if grant.rows:
            grants.append((now, grant.rows))
        now += grant.wait or 1e-4

    for start, _ in grants:
        in_window = sum(rows for at, rows in grants if start <= at < start + 1.0)
        assert in_window <= 200 + pace.burst
    assert sum(rows for _, rows in grants) == pytest.approx(200 * 10 + pace.burst, abs=pace.burst)


def test_rows_given_back_can_be_granted_again_at_once():
    pace = Pace(200)
    grant, tat = take(pace, tat=0.0, now=50.0, want=1000)
    tat = give_back(pace, tat, now=50.0, rows=grant.rows)

    again, _ = take(pace, tat, now=50.0, want=1000)
    assert again == Grant(20)


def test_giving_back_never_builds_up_more_than_one_burst():
    pace = Pace(200)
    _, tat = take(pace, tat=0.0, now=50.0, want=5)
    tat = give_back(pace, tat, now=60.0, rows=500)

    grant, _ = take(pace, tat, now=60.0, want=1000)
    assert grant == Grant(20)


def test_a_slow_rate_grants_one_row_at_a_time_and_says_how_long_until_the_next():
    pace = Pace(events_per_second("10/m"))
    first, tat = take(pace, tat=0.0, now=0.0, want=1000)
    second, _ = take(pace, tat, now=1.0, want=1000)

    assert first == Grant(1)
    assert second.rows == 0
    assert second.wait == pytest.approx(5.0)


def test_the_local_budget_shares_one_pace_between_its_instances():
    label = f"unit-{time.monotonic_ns()}"
    first, second = LocalBudget(label, Pace(50)), LocalBudget(label, Pace(50))

    assert first.take(100) == Grant(5)
    assert second.take(100).rows == 0
    first.give_back(5)
    assert second.take(100) == Grant(5)


def test_a_sweep_whose_next_grant_comes_after_its_deadline_stops_without_waiting():
    budget = LocalBudget(f"unit-{time.monotonic_ns()}", Pace(10))
    budget.take(1)  # the one-row burst is spent: the next comes in 0.1 s
    drain = Drain(
        model=ScheduledPing,
        now=None,
        batch_size=1000,
        lock=LocalSweepLock("unit", 30.0),
        batch=lambda allowance: BatchResult(),
        overlap=False,
        budget=budget,
    )
    result = SweepResult(model=LABEL)

    started = time.monotonic()
    allowance = drain.allowance(result, deadline=started + 0.01, stop=None)

    assert allowance.rows == 0
    assert time.monotonic() - started < 0.1  # it did not sleep through the deadline


# --- configuration ----------------------------------------------------------------------------


def test_the_setting_overrides_the_models_own_limit_and_none_there_lifts_it(monkeypatch):
    monkeypatch.setattr(ScheduledPing, "rate_limit", "100/s")
    assert ScheduledPing.get_rate_limit() == "100/s"
    with override_settings(SCHEDULING_RATE_LIMITS={"testapp.scheduledping": "10/m"}):
        assert ScheduledPing.get_rate_limit() == "10/m"
    with override_settings(SCHEDULING_RATE_LIMITS={LABEL: None}):
        assert ScheduledPing.get_rate_limit() is None
    with override_settings(SCHEDULING_RATE_LIMITS={"purchases.ScheduledPurchase": "1/s"}):
        assert ScheduledPing.get_rate_limit() == "100/s"


def test_no_limit_is_the_default():
    assert ScheduledPing.get_rate_limit() is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            {LABEL: "fast"},
            "SCHEDULING_RATE_LIMITS['testapp.ScheduledPing']='fast' is not valid: expected "
            "<requests>/<period>, e.g. 60/min, 10/s",
        ),
        (
            {"ScheduledPing": "5/s"},
            "'ScheduledPing' is not app_label.ModelName",
        ),
        (
            "testapp.ScheduledPing=5/s",
            "SCHEDULING_RATE_LIMITS='testapp.ScheduledPing=5/s' is not valid: expected a dict of "
            "model label to rate or None, e.g. {'purchases.ScheduledPurchase': '500/s'",
        ),
    ],
)
def test_a_bad_rate_limits_setting_is_refused_naming_the_label_and_the_form(value, message):
    with override_settings(SCHEDULING_RATE_LIMITS=value), pytest.raises(ImproperlyConfigured) as no:
        scheduling_settings()
    assert message in str(no.value)


def test_a_label_that_names_no_scheduled_model_is_a_check_error():
    with override_settings(SCHEDULING_RATE_LIMITS={"testapp.Ping": "5/s", LABEL: "5/s"}):
        [error] = check_rate_limits()

    assert error.id == "scheduling.E006"
    assert error.msg.startswith("SCHEDULING_RATE_LIMITS names 'testapp.Ping', which is not a")
    assert "testapp.ScheduledPing" in error.msg


def test_a_models_own_bad_rate_limit_is_a_check_error_naming_the_model(monkeypatch):
    monkeypatch.setattr(ScheduledPing, "rate_limit", "500 per second")

    [error] = check_rate_limits()

    assert error.id == "scheduling.E007"
    assert error.obj is ScheduledPing
    assert error.msg.startswith(
        "testapp.ScheduledPing.rate_limit='500 per second' is not valid: expected <requests>/"
    )


def test_the_environment_variable_reads_label_rate_pairs(monkeypatch):
    monkeypatch.setenv("SCHEDULING_RATE_LIMITS", " purchases.ScheduledPurchase=500/s, x.Y=none,")

    assert env_mapping("SCHEDULING_RATE_LIMITS", {}) == {
        "purchases.ScheduledPurchase": "500/s",
        "x.Y": None,
    }


def test_the_environment_variable_refuses_a_pair_without_a_rate(monkeypatch):
    monkeypatch.setenv("SCHEDULING_RATE_LIMITS", "purchases.ScheduledPurchase:500/s")

    with pytest.raises(ImproperlyConfigured) as refused:
        env_mapping("SCHEDULING_RATE_LIMITS", {})
    assert str(refused.value).startswith(
        "SCHEDULING_RATE_LIMITS='purchases.ScheduledPurchase:500/s' is not valid: expected "
        "key=value[,key=value...]"
    )
