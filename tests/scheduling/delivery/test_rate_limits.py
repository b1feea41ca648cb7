"""Rate limits with the real Redis and PostgreSQL: one budget for every client and sweeper, rows
over it left pending in due order, the limit changed without a restart, the metrics apart."""

import threading
import time
from io import StringIO

import pytest
import redis
from django.conf import settings
from django.core.management import CommandError, call_command
from django.test import override_settings

from scheduling.delivery import ratelimit
from scheduling.delivery.metrics import exposition
from scheduling.delivery.ratelimit import KEY, Grant, Pace, RedisBudget, current_limit
from scheduling.delivery.sweep.run import sweep
from tests.conftest import UNREACHABLE_REDIS_CACHE, delivered_by, queued_task_ids, wait_for
from tests.factories import make_due_pings
from tests.faults.conftest import Tail, end, published_ids, sweeper
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db(transaction=True)

LABEL = "testapp.ScheduledPing"
BUDGET = "testapp.scheduledping"


def budget(per_second: float) -> RedisBudget:
    """A budget on a connection of its own, as another sweeper process would have."""
    return RedisBudget(BUDGET, Pace(per_second), redis.Redis.from_url(settings.REDIS_URL))


def test_two_clients_draw_on_one_budget():
    first, second = budget(200), budget(200)

    assert first.take(1000) == Grant(20)
    refused = second.take(1000)
    first.give_back(20)

    assert refused.rows == 0
    assert 0 < refused.wait <= 0.1
    assert second.take(1000) == Grant(20)


def test_the_budget_keeps_its_key_no_longer_than_it_means_something():
    budget(200).take(1000)

    ttl = redis.Redis.from_url(settings.REDIS_URL).pttl(KEY.format(label=BUDGET))
    assert 0 < ttl <= 101  # the 20 rows' 100 ms, rounded up


def test_two_clients_taking_as_fast_as_allowed_stay_within_the_rate_plus_one_burst():
    grants: list[tuple[float, int]] = []
    started = time.monotonic()

    def sweeper() -> None:
        mine = budget(200)
        while time.monotonic() - started < 1.5:
            grant = mine.take(1000)
            if grant.rows:
                grants.append((time.monotonic(), grant.rows))
            time.sleep(grant.wait)

    threads = [threading.Thread(target=sweeper) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started

    # The limit (200/s) over the time they ran, plus the one burst (20) a fresh budget holds.
    assert sum(rows for _, rows in grants) <= 200 * elapsed + 20
    assert {rows for _, rows in grants} == {20}


@override_settings(SCHEDULING_RATE_LIMITS={LABEL: "100/s"})
def test_rows_over_the_budget_stay_pending_in_due_order_and_a_later_sweep_delivers_them(broker):
    pks = make_due_pings(30)

    first = sweep(ScheduledPing, time_budget=0.001)  # one burst; the next comes too late for it

    assert (first.delivered, first.drained) == (10, False)
    delivered = ScheduledPing.objects.filter(status=ScheduledPing.Status.DELIVERED)
    assert sorted(delivered.values_list("pk", flat=True)) == pks[:10]
    assert ScheduledPing.objects.filter(status=ScheduledPing.Status.PENDING).count() == 20

    rest = sweep(ScheduledPing)  # waits for its grants within its time budget

    assert (rest.delivered, rest.drained) == (20, True)
    assert rest.rate_wait > 0
    ids = queued_task_ids(broker, "testapp")
    assert sorted(ids) == sorted(row.event_id for row in ScheduledPing.objects.all())


@override_settings(SCHEDULING_RATE_LIMITS={LABEL: "100/s"})
def test_a_grant_larger_than_what_was_due_is_given_back():
    make_due_pings(3)

    assert sweep(ScheduledPing).delivered == 3

    # 3 of the burst of 10 were used; the 7 left are there at once for another sweeper.
    assert budget(100).take(7) == Grant(7)


@override_settings(SCHEDULING_RATE_LIMITS={LABEL: "100/s"})
def test_the_limit_and_the_rows_it_held_back_are_in_the_metrics():
    make_due_pings(25)

    sweep(ScheduledPing)

    text = exposition().decode()
    assert f'scheduling_rate_limit_per_second{{model="{BUDGET}"}} 100.0' in text
    assert f'scheduling_rate_limited_total{{model="{BUDGET}"}} 25.0' in text
    assert f'scheduling_rate_limited_lateness_seconds_total{{model="{BUDGET}"}}' in text
    waited = f'scheduling_rate_limit_wait_seconds_total{{model="{BUDGET}"}} '
    [line] = [line for line in text.splitlines() if line.startswith(waited)]
    assert float(line.removeprefix(waited)) > 0


@pytest.fixture
def fresh_process_state(monkeypatch):
    """As in a new sweeper process: no outage noted, no in-memory pace (another test in this
    process may have left either behind)."""
    monkeypatch.setattr(ratelimit.STORE, "until", {})
    monkeypatch.setattr(ratelimit.LocalBudget, "_arrivals", {})


@override_settings(CACHES=UNREACHABLE_REDIS_CACHE, SCHEDULING_RATE_LIMITS={LABEL: "100/s"})
@pytest.mark.usefixtures("fresh_process_state")
def test_with_the_store_away_each_sweeper_keeps_the_limit_on_its_own(broker, caplog):
    make_due_pings(15)

    result = sweep(ScheduledPing)

    # Whether the sweep also saw the queue empty depends on the budget left for its last
    # look, which the machine's speed decides: the 15 rows are what must go.
    assert result.delivered == 15
    assert result.rate_wait > 0  # paced in memory: one burst of 10, then a wait for 5 more
    assert "rate limit store unreachable" in caplog.text


def run(*args: str) -> str:
    out = StringIO()
    call_command("scheduling_rate_limit", *args, stdout=out)
    return out.getvalue()


@override_settings(SCHEDULING_RATE_LIMITS={LABEL: "10/s"})
def test_an_operator_changes_the_limit_for_every_sweeper_without_a_restart():
    assert run(LABEL) == f"{LABEL}: 10/s (configured)\n"

    assert run(LABEL, "300/m") == f"{LABEL}: 5/s (override)\n"
    assert current_limit(ScheduledPing) == 5.0
    assert run(LABEL, "none") == f"{LABEL}: unlimited (override)\n"
    assert current_limit(ScheduledPing) is None
    assert run(LABEL, "--clear") == f"{LABEL}: 10/s (configured)\n"
    assert current_limit(ScheduledPing) == 10.0


def test_the_command_refuses_a_bad_rate_naming_the_form():
    with pytest.raises(CommandError, match=r"'fast' is not valid: expected <requests>/<period>"):
        run(LABEL, "fast")
    with pytest.raises(CommandError, match="either a rate or --clear"):
        run(LABEL, "5/s", "--clear")


# --- the test: two sweeper daemons, one budget ------------------------------------------

ROWS, LIMIT = 1000, 200
# Over any second, the limit plus one burst (a tenth of a second's worth: 20 rows), plus what
# the time between a grant and its batch's commit (delivered_at) may shift into the same second
# on a loaded machine: up to 0.15 s, 30 rows.
MOST_IN_A_SECOND = LIMIT + 20 + 30


def test_two_sweeper_daemons_publish_a_limited_backlog_at_the_limit_none_lost_none_twice(
    subprocess_env, broker
):
    make_due_pings(ROWS)
    env = {
        **subprocess_env,
        "SCHEDULING_RATE_LIMITS": f"{LABEL}={LIMIT}/s",
        "SCHEDULING_SWEEPER_SLOTS": "2",  # each daemon sweeps the slot the other does not hold
    }
    daemons = [Tail(sweeper(env, "--loop")) for _ in range(2)]
    try:
        wait_for(lambda: not pending_rows(), timeout=120, interval=0.2)
    finally:
        for daemon in daemons:
            end(daemon.process)
    outputs = [daemon.finish() for daemon in daemons]

    times = sorted(ScheduledPing.objects.values_list("delivered_at", flat=True))
    ids = published_ids(broker)
    assert len(ids) == len(set(ids)) == ROWS
    assert set(ids) == {row.event_id for row in ScheduledPing.objects.all()}
    assert set(ScheduledPing.objects.values_list("attempts", flat=True)) == {1}
    assert all(delivered_by(output) > 0 for output in outputs), outputs
    span, most = (times[-1] - times[0]).total_seconds(), most_in_one_second(times)
    print(f"\nRATE {ROWS} rows at {LIMIT}/s: {span:.2f} s, at most {most} in one second")
    assert span >= 4.5
    assert most <= MOST_IN_A_SECOND


def pending_rows() -> int:
    return ScheduledPing.objects.filter(status=ScheduledPing.Status.PENDING).count()


def most_in_one_second(times: list) -> int:
    most, start = 0, 0
    for end_index, at in enumerate(times):
        while (at - times[start]).total_seconds() >= 1.0:
            start += 1
        most = max(most, end_index - start + 1)
    return most
