from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from scheduling.delivery import metrics
from scheduling.delivery.handling.once import handle_once
from scheduling.delivery.metrics import gauges, store
from scheduling.delivery.sweep.run import sweep
from tests.conftest import UNREACHABLE_REDIS_CACHE
from tests.factories import ScheduledPingFactory, make_due_pings
from tests.ops.helpers import PING, TOKEN, scrape, value
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def metrics_token(settings):
    settings.SCHEDULING_METRICS_TOKEN = TOKEN


def get(client, authorization=None):
    headers = {"authorization": authorization} if authorization else {}
    return client.get("/metrics", headers=headers).status_code


def test_metrics_answer_401_without_credentials_and_403_to_a_wrong_token(client):
    assert get(client) == 401
    assert client.get("/metrics")["WWW-Authenticate"].startswith("Bearer")
    assert get(client, "Bearer wrong") == 403
    assert get(client, f"Basic {TOKEN}") == 403
    assert get(client, f"Bearer {TOKEN}") == 200


def test_metrics_answer_a_staff_session_and_refuse_other_users(
    client, admin_client, django_user_model
):
    assert get(admin_client) == 200
    client.force_login(django_user_model.objects.create_user("someone", password="pw"))
    assert get(client) == 403


def test_without_a_configured_token_no_bearer_is_accepted(client, admin_client, settings):
    settings.SCHEDULING_METRICS_TOKEN = ""
    assert get(client, "Bearer ") == 403
    assert get(client, "Bearer anything") == 403
    assert get(admin_client) == 200


def test_the_gauges_count_due_rows_and_the_oldest_lateness_by_the_database_clock(client):
    ScheduledPingFactory(due_at=timezone.now() - timedelta(minutes=10))
    ScheduledPingFactory(due_at=timezone.now() - timedelta(minutes=1))
    ScheduledPingFactory(due_at=timezone.now() + timedelta(hours=1))
    ScheduledPingFactory(status="failed")

    samples = scrape(client)

    assert value(samples, "scheduling_due_rows") == 2
    assert value(samples, "scheduling_pending_rows") == 3
    assert 600 <= value(samples, "scheduling_oldest_due_seconds") < 660
    assert value(samples, "scheduling_failed_rows") == 1
    assert samples["scheduling_metrics_store_up", ()] == 1


def test_a_sweep_and_handlings_count_once_committed(client, django_capture_on_commit_callbacks):
    make_due_pings(3, ago=timedelta(seconds=30))
    with django_capture_on_commit_callbacks(execute=True):
        sweep(ScheduledPing)
    row = ScheduledPing.objects.first()
    event = row.to_event("")
    with django_capture_on_commit_callbacks(execute=True), handle_once(event, ScheduledPing):
        pass

    samples = scrape(client)

    assert value(samples, "scheduling_published_total") == 3
    assert value(samples, "scheduling_handled_total") == 1
    assert value(samples, "scheduling_publish_lateness_seconds_count") == 3
    assert value(samples, "scheduling_publish_lateness_seconds_bucket", le="10.0") == 0
    assert value(samples, "scheduling_publish_lateness_seconds_bucket", le="60.0") == 3
    assert 90 <= value(samples, "scheduling_publish_lateness_seconds_sum") < 120
    assert value(samples, "scheduling_sweep_duration_seconds_count") == 1
    last = value(samples, "scheduling_last_sweep_timestamp_seconds")
    assert abs(last - datetime.now(UTC).timestamp()) < 30


def test_recent_minutes_gives_one_bucket_per_minute_with_lateness_quantiles(
    django_capture_on_commit_callbacks,
):
    make_due_pings(4, ago=timedelta(seconds=3))
    with django_capture_on_commit_callbacks(execute=True):
        sweep(ScheduledPing)
    recorded = datetime.now(UTC)

    buckets = metrics.recent_minutes("testapp.ScheduledPing", minutes=5, now=recorded)

    assert len(buckets) == 5
    assert [bucket.published for bucket in buckets[:-1]] == [0, 0, 0, 0]
    now = buckets[-1]
    assert (now.published, now.handled, now.handle_failures) == (4, 0, 0)
    assert now.minute == recorded.replace(second=0, microsecond=0)
    assert 2.5 <= now.lateness_p50 <= 5
    assert 2.5 <= now.lateness_p99 <= 5
    assert buckets[0].lateness_p50 is None


def test_snapshot_reads_the_gauges_of_one_model():
    ScheduledPingFactory(due_at=timezone.now() - timedelta(seconds=90))
    ScheduledPingFactory(status="delivered", delivered_at=timezone.now())

    shot = metrics.snapshot(ScheduledPing)

    assert (shot.pending, shot.due_now, shot.failed_rows, shot.awaiting_handling) == (1, 1, 0, 1)
    assert 90 <= shot.oldest_due_seconds < 120


def test_quantiles_interpolate_within_buckets_as_promql_does():
    buckets = [(1.0, 0.0), (2.0, 10.0), (4.0, 20.0), (float("inf"), 20.0)]
    assert store.quantile(0.5, buckets) == 2.0
    assert store.quantile(0.75, buckets) == 3.0
    assert store.quantile(0.5, [(1.0, 0.0), (float("inf"), 0.0)]) is None
    assert store.quantile(0.99, [(1.0, 1.0), (float("inf"), 5.0)]) == 1.0


@override_settings(CACHES=UNREACHABLE_REDIS_CACHE)
def test_a_sweep_and_a_handler_go_on_when_the_metrics_store_is_down(
    client, django_capture_on_commit_callbacks, monkeypatch
):
    monkeypatch.setattr(store, "_outage", store._Outage())
    make_due_pings(2)
    with django_capture_on_commit_callbacks(execute=True):
        result = sweep(ScheduledPing)
    event = ScheduledPing.objects.first().to_event("")
    with django_capture_on_commit_callbacks(execute=True), handle_once(event) as row:
        assert row is not None

    assert result.delivered == 2
    assert ScheduledPing.objects.filter(handled_at__isnull=False).count() == 1
    response = client.get("/metrics", headers={"authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    assert b"scheduling_metrics_store_up 0.0" in response.content
    assert b"scheduling_published_total" not in response.content
    assert b'scheduling_due_rows{model="testapp.scheduledping"} 0.0' in response.content
    assert [b.published for b in metrics.recent_minutes(PING, minutes=2)] == [0, 0]


def test_counts_stop_at_the_cap_and_pending_rows_past_it_are_estimated(monkeypatch):
    monkeypatch.setattr(gauges, "COUNT_CAP", 3)
    make_due_pings(5)

    shot = metrics.snapshot(ScheduledPing)

    assert shot.due_now == 3
    assert shot.pending >= 3
