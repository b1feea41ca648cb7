"""Fairness by a business key (a model's fairness_key): a limited sweep takes due rows round-robin
across keys, in due order within each; several sweepers still claim each row once; a model
without one keeps due order; a bad key is a check error naming the attribute."""

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone

from purchases.models import Account, Artist, Customer, Purchase, Release, ScheduledPurchase
from scheduling.delivery.checks import check_fairness_keys
from scheduling.delivery.sweep.batch import claim_due
from scheduling.delivery.sweep.run import sweep
from scheduling.delivery.sweep.turns import RANKING_MAX_AGE, Turns
from scheduling.rows.fairness import fairness_key_error
from tests.conftest import delivered_by, manage, queued_events
from tests.factories import make_due_pings
from tests.scheduling.delivery.test_embedded_mode import embedded_env, run
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fair_pings(ping_model, monkeypatch):
    monkeypatch.setattr(ping_model, "fairness_key", "ping__group")
    return ping_model


def claim(model, limit):
    with transaction.atomic():
        return claim_due(model, cutoff=timezone.now(), limit=limit)


def test_a_cut_claim_takes_each_key_in_turn_in_due_order(fair_pings):
    big = make_due_pings(30, group="big", ago=timedelta(minutes=5), model=fair_pings)
    small = make_due_pings(4, group="small", ago=timedelta(minutes=4), model=fair_pings)

    claimed = [row.pk for row in claim(fair_pings, 10)]

    assert sorted(claimed) == sorted(big[:6] + small)
    assert [pk for pk in claimed if pk in small] == small
    assert [pk for pk in claimed if pk in big] == big[:6]


def test_without_a_fairness_key_the_claim_keeps_due_order(ping_model):
    big = make_due_pings(30, group="big", ago=timedelta(minutes=5), model=ping_model)
    make_due_pings(4, group="small", ago=timedelta(minutes=4), model=ping_model)

    assert [row.pk for row in claim(ping_model, 10)] == big[:10]


def test_a_fair_claim_leaves_the_rows_the_sweep_set_aside(fair_pings):
    big = make_due_pings(10, group="big", model=fair_pings)
    small = make_due_pings(3, group="small", model=fair_pings)

    with transaction.atomic():
        rows = claim_due(fair_pings, cutoff=timezone.now(), limit=4, skip={big[0], small[0]})

    assert sorted(row.pk for row in rows) == sorted(big[1:3] + small[1:3])


def test_a_fair_claim_skips_rows_another_sweeper_holds(fair_pings):
    big = make_due_pings(30, group="big", model=fair_pings)
    small = make_due_pings(4, group="small", model=fair_pings)
    with transaction.atomic():
        first = [row.pk for row in claim_due(fair_pings, cutoff=timezone.now(), limit=6)]
        # Another connection claims while the first batch is held: none of it comes back.
        second = in_another_thread(lambda: [row.pk for row in claim(fair_pings, 6)])

    assert not set(first) & set(second)
    assert sorted(first + second) == sorted(big[:8] + small)


def claim_turns(turns, limit):
    with transaction.atomic():
        rows = claim_due(turns.model, cutoff=timezone.now(), limit=limit, turns=turns)
        turns.model.objects.filter(pk__in=[row.pk for row in rows]).update(status="delivered")
    return [row.pk for row in rows]


def test_a_sweeps_batches_take_turns_from_one_ranking(fair_pings):
    big = make_due_pings(12, group="big", ago=timedelta(minutes=5), model=fair_pings)
    small = make_due_pings(3, group="small", ago=timedelta(minutes=4), model=fair_pings)
    turns = Turns(fair_pings, batch_size=4)

    batches = [claim_turns(turns, 4) for _ in range(4)]

    assert batches == [
        [big[0], small[0], big[1], small[1]],
        [big[2], small[2], big[3], big[4]],
        big[5:9],
        big[9:12],
    ]


def test_rows_that_fall_due_after_the_ranking_get_their_turn_once_it_ages(fair_pings, monkeypatch):
    big = make_due_pings(20, group="big", ago=timedelta(minutes=5), model=fair_pings)
    turns = Turns(fair_pings, batch_size=2)
    assert claim_turns(turns, 2) == big[:2]
    late = make_due_pings(1, group="late", ago=timedelta(seconds=1), model=fair_pings)

    assert claim_turns(turns, 2) == big[2:4]  # the ranking is fresh: the late key waits
    monkeypatch.setattr(turns, "ranked_at", turns.ranked_at - RANKING_MAX_AGE - 0.01)

    assert claim_turns(turns, 2) == [big[4], late[0]]


def test_rows_another_sweeper_took_from_the_ranking_do_not_shorten_the_batch(fair_pings):
    big = make_due_pings(30, group="big", model=fair_pings)
    turns = Turns(fair_pings, batch_size=5)
    assert claim_turns(turns, 5) == big[:5]
    fair_pings.objects.filter(pk__in=big[5:25]).update(status="delivered")  # another sweeper's

    assert claim_turns(turns, 5) == big[25:30]


def in_another_thread(work):
    """`work()` on a connection of its own, as another sweeper's."""
    answer = []

    def run():
        try:
            answer.append(work())
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return answer[0]


CLAIM_ON_SQLITE = """
from datetime import timedelta
from django.db import transaction
from django.utils import timezone
from scheduling.delivery.sweep.batch import claim_due
from tests.factories import make_due_pings
from tests.scheduling.delivery.test_embedded_mode import embedded_env, run
from tests.testapp.models import ScheduledPing
ScheduledPing.fairness_key = "ping__group"
big = make_due_pings(30, group="big", ago=timedelta(minutes=5))
small = make_due_pings(4, group="small", ago=timedelta(minutes=4))
with transaction.atomic():
    claimed = [row.pk for row in claim_due(ScheduledPing, cutoff=timezone.now(), limit=10)]
print(sorted(claimed) == sorted(big[:6] + small))
"""


@pytest.mark.slow
def test_the_embedded_mode_claims_fairly_too(tmp_path):
    env = embedded_env(tmp_path)
    run(env, "migrate", "-v", "0")

    assert run(env, "shell", "-v", "0", "-c", CLAIM_ON_SQLITE).strip() == "True"


# --- the scenario: the pre-order emails of a big and a small label ------------------------

LABEL = "purchases.ScheduledPurchase"


def pre_orders(label: str, count: int, due_at) -> list[int]:
    """`count` paid pre-orders of one release of the label `label`, their emails due at
    `due_at` plus a microsecond each; their scheduled rows' pks in due order."""
    account = Account.objects.create(name=label)
    release = Release.objects.create(
        artist=Artist.objects.create(name=f"{label} artist", account=account),
        title=f"{label} album",
        release_date=due_at,
    )
    customers = Customer.objects.bulk_create(
        Customer(email=f"{label}-{n}@example.com") for n in range(count)
    )
    purchases = Purchase.objects.bulk_create(
        Purchase(customer=customer, release=release) for customer in customers
    )
    rows = ScheduledPurchase.objects.bulk_create(
        ScheduledPurchase(purchase=purchase, due_at=due_at + timedelta(microseconds=n))
        for n, purchase in enumerate(purchases)
    )
    return [row.pk for row in rows]


@override_settings(SCHEDULING_RATE_LIMITS={LABEL: "200/s"})
def test_a_small_labels_emails_go_within_two_seconds_of_a_big_labels_release_day(broker):
    release_day = timezone.now() - timedelta(seconds=10)
    big = pre_orders("big", 2000, release_day)
    small = pre_orders("small", 20, release_day + timedelta(seconds=1))

    result = sweep(ScheduledPurchase, time_budget=2.0)  # the first 2 seconds of sweeping

    published = [event["pk"] for event in queued_events(broker, "purchases")]
    assert result.delivered == len(published) < len(big)  # the limit held the big label back
    assert set(small) <= set(published)
    assert [pk for pk in published if pk in set(small)] == small
    assert [pk for pk in published if pk not in set(small)] == big[: len(published) - 20]
    # Turn by turn: the small label's 20 went out among the first 40 published (0.2 s at 200/s).
    assert max(published.index(pk) for pk in small) < 40
    delivered = ScheduledPurchase.objects.filter(pk__in=small).values_list(
        "delivered_at", flat=True
    )
    first = ScheduledPurchase.objects.exclude(delivered_at=None).earliest("delivered_at")
    assert max(delivered) - first.delivered_at < timedelta(seconds=2)


@pytest.mark.slow
def test_racing_sweepers_with_fairness_publish_every_row_exactly_once(subprocess_env, broker):
    now = timezone.now() - timedelta(minutes=1)
    pks = [pk for n in range(30) for pk in pre_orders(f"label{n}", 100 * (n % 5 + 1), now)]
    env = {**subprocess_env, "SCHEDULING_BATCH_SIZE": "100"}

    # A slot each: four locks, so the lock cannot keep them apart; the claims race.
    sweepers = [manage(env, "sweep", LABEL, "--slot", str(slot)) for slot in range(4)]
    outputs = [sweeper.communicate(timeout=240)[0] for sweeper in sweepers]

    assert all(sweeper.returncode == 0 for sweeper in sweepers), outputs
    published = Counter(event["pk"] for event in queued_events(broker, "purchases"))
    assert set(published) == set(pks)
    assert max(published.values()) == 1
    assert sum(delivered_by(output) for output in outputs) == len(pks)
    assert sum(delivered_by(output) > 0 for output in outputs) >= 2, "the sweepers did not race"


# --- a bad fairness_key -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("ping__colour", "'colour' is not a field of testapp.Ping"),
        ("ping__name__first", "'name' of testapp.Ping is not a relation, so the path cannot"),
        ("ping__scheduled", "'scheduled' of testapp.Ping is not a forward relation or a field"),
        ("", "expected a field path through the row's foreign keys"),
    ],
)
def test_a_bad_fairness_key_is_a_check_error_naming_the_attribute(monkeypatch, key, problem):
    monkeypatch.setattr(ScheduledPing, "fairness_key", key)

    [error] = [error for error in check_fairness_keys() if error.obj is ScheduledPing]

    assert error.id == "scheduling.E012"
    assert error.msg.startswith(f"testapp.ScheduledPing.fairness_key = {key!r} is not valid: ")
    assert problem in error.msg
    assert "such as 'purchase__release__artist__account'" in error.msg


@pytest.mark.parametrize("key", [None, "ping", "ping__group", "ping__id", "status"])
def test_a_good_fairness_key_passes(monkeypatch, key):
    monkeypatch.setattr(ScheduledPing, "fairness_key", key)

    assert fairness_key_error(ScheduledPing) is None


def test_the_demos_keys_pass_the_check():
    assert check_fairness_keys() == []
