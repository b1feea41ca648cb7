"""Alarms on the dashboard and "needs attention": a late model (by /healthz's rule), rows not
handled within the handling timeout, and the backlog's expected end at the current pace."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from scheduling.delivery import metrics
from scheduling.delivery.metrics import MinuteBucket, gauges
from scheduling.ops.admin import alarms
from scheduling.rows.states import Status
from tests.factories import PingFactory, ScheduledPingFactory, make_due_pings
from tests.testapp.models import ScheduledOnce, ScheduledPing

pytestmark = pytest.mark.django_db
DATA = "/admin/scheduling/dashboard/data/"
PAGE = "/admin/scheduling/dashboard/"
ATTENTION = "/admin/scheduling/attention/"
PING = "testapp.scheduledping"


@pytest.fixture
def limits(settings):
    settings.SCHEDULING_HEALTH_MAX_LATENESS = 20
    settings.SCHEDULING_HANDLING_TIMEOUT = 600


def figures(client: Client, model: str = PING) -> dict:
    return next(m for m in client.get(DATA).json()["models"] if m["model"] == model)


def delivered_pings(count: int, *, ago: timedelta) -> list[ScheduledPing]:
    """Published `ago`, never handled: what a stopped worker leaves."""
    delivered_at = timezone.now() - ago
    return ScheduledPingFactory.create_batch(
        count, status=Status.DELIVERED, delivered_at=delivered_at, due_at=delivered_at
    )


def summary_row(page: str, model: str = PING) -> str:
    match = re.search(rf'<tr data-model="{re.escape(model)}"[^>]*>.*?</tr>', page, re.S)
    assert match, f"no summary row for {model}"
    return match.group(0)


# --- the dashboard ------------------------------------------------------------------------------


def test_a_due_row_later_than_the_health_limit_puts_its_model_in_alarm(admin_client, limits):
    make_due_pings(2, ago=timedelta(seconds=31))

    shown = figures(admin_client)
    row = summary_row(admin_client.get(PAGE).content.decode())
    health = admin_client.get("/healthz").json()

    assert shown["late"] is True
    assert re.fullmatch(r"Late: the oldest due row waits 3\d s \(limit 20 s\)", shown["alarms"][0])
    assert row.startswith(f'<tr data-model="{PING}" class="alarm">')
    assert "<li>Late: the oldest due row waits" in row
    assert 'data-alarm-when="late" class="alarm-cell"' in row
    assert health["delivery"].startswith(f"late: {PING} 3")  # the same rule, the same verdict


def test_a_due_row_within_the_health_limit_raises_no_alarm(admin_client, limits):
    make_due_pings(2, ago=timedelta(seconds=5))

    shown = figures(admin_client)
    page = admin_client.get(PAGE).content.decode()

    assert (shown["late"], shown["alarms"], shown["not_handled_in_time"]) == (False, [], 0)
    assert summary_row(page).startswith(f'<tr data-model="{PING}">')
    assert "delivery" not in admin_client.get("/healthz").json()


def test_rows_not_handled_within_the_timeout_put_their_model_in_alarm(admin_client, limits):
    delivered_pings(2, ago=timedelta(minutes=11))
    delivered_pings(1, ago=timedelta(minutes=1))  # still within the timeout

    shown = figures(admin_client)
    page = admin_client.get(PAGE).content.decode()

    assert (shown["awaiting_handling"], shown["not_handled_in_time"]) == (3, 2)
    assert shown["alarms"] == ["Stalled: 2 rows not handled within 600 s"]
    assert shown["late"] is False
    assert "<li>Stalled: 2 rows not handled within 600 s</li>" in summary_row(page)
    assert 'data-alarm-when="not_handled_in_time" class="alarm-cell"' in summary_row(page)
    assert 'id="dashboard-alarm-summary" class="alarm-summary" role="status">' in page


def test_a_model_with_its_own_handling_timeout_is_judged_by_it(admin_client, limits, monkeypatch):
    delivered_pings(1, ago=timedelta(minutes=3))
    monkeypatch.setattr(ScheduledPing, "handling_timeout", 120.0)

    assert figures(admin_client)["alarms"] == ["Stalled: 1 row not handled within 120 s"]


def test_models_in_alarm_come_first_and_are_counted(admin_client, limits):
    delivered_pings(1, ago=timedelta(hours=1))

    payload = admin_client.get(DATA).json()

    assert payload["in_alarm"] == 1
    assert payload["models"][0]["model"] == PING


def test_without_alarms_the_summary_banner_is_hidden(admin_client, limits):
    page = admin_client.get(PAGE).content.decode()

    assert admin_client.get(DATA).json()["in_alarm"] == 0
    assert 'class="alarm-summary" role="status" hidden>' in page
    assert 'href="/static/scheduling/alarms.css"' in page


# --- the backlog's expected end -----------------------------------------------------------------


def test_a_backlog_being_published_shows_when_it_will_be_done(
    admin_client, django_capture_on_commit_callbacks
):
    make_due_pings(50, ago=timedelta(minutes=2))
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):  # counted as a sweep's commit counts
        metrics.record_published(ScheduledPing, [ScheduledPing(due_at=now)] * 30, cutoff=now)

    backlog = figures(admin_client)["backlog"]

    assert backlog["rows"] == 50
    assert backlog["pace_per_second"] > 0
    assert re.fullmatch(r"done in (< 1 min|~\d+ min) \(at \d\d:\d\d\)", backlog["text"])
    assert datetime.fromisoformat(backlog["done_at"]) > now


def test_a_backlog_nobody_publishes_shows_no_progress(admin_client):
    make_due_pings(3)

    backlog = figures(admin_client)["backlog"]
    page = admin_client.get(PAGE).content.decode()

    assert backlog == {"rows": 3, "pace_per_second": 0.0, "done_at": None, "text": "no progress"}
    assert '<td data-field="backlog.text" class="backlog">no progress</td>' in summary_row(page)


def test_nothing_due_is_no_backlog(admin_client):
    ScheduledPingFactory(due_at=timezone.now() + timedelta(hours=1))

    assert figures(admin_client)["backlog"]["text"] == "nothing due"


MINUTE = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


def minute(at: datetime, published: int) -> MinuteBucket:
    return MinuteBucket(at, published, 0, 0, None, None)


def test_the_pace_is_what_the_last_minute_and_this_one_published_per_second():
    recent = [
        minute(MINUTE - timedelta(minutes=5), 999),
        minute(MINUTE, 60),
        minute(MINUTE + timedelta(minutes=1), 30),
    ]
    now = MINUTE + timedelta(seconds=90)

    with timezone.override(UTC):
        backlog = alarms.expected_backlog(ScheduledPing, 600, recent, now)

    assert backlog.pace == 1.0  # 90 published over the 90 s since 09:00
    assert backlog.done_at == now + timedelta(seconds=600)
    assert backlog.text == "done in ~10 min (at 09:11)"


def test_a_long_backlog_reads_in_hours():
    recent = [minute(MINUTE, 12_000), minute(MINUTE + timedelta(minutes=1), 0)]
    now = MINUTE + timedelta(minutes=2)

    with timezone.override(UTC):
        backlog = alarms.expected_backlog(ScheduledPing, 1_000_000, recent, now)

    assert backlog.pace == 100.0
    assert backlog.text == "done in ~2 h 47 min (at 11:48)"  # 10,000 s from 09:02


def test_the_models_rate_limit_caps_the_expected_pace(settings):
    recent = [minute(MINUTE, 60_000), minute(MINUTE + timedelta(minutes=1), 0)]
    settings.SCHEDULING_RATE_LIMITS = {"testapp.ScheduledPing": "200/s"}

    backlog = alarms.expected_backlog(ScheduledPing, 12_000, recent, MINUTE + timedelta(minutes=1))

    assert backlog.pace == 200.0  # not the 1,000/s the last minute published
    assert backlog.done_at == MINUTE + timedelta(minutes=2)


def test_past_the_count_cap_the_backlog_is_postgresql_s_estimate(monkeypatch):
    make_due_pings(40)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE scheduled_ping")
    monkeypatch.setattr(gauges, "COUNT_CAP", 10)

    counted = metrics.snapshot(ScheduledPing).due_now

    assert counted == 10
    assert 30 <= metrics.due_rows(ScheduledPing, counted) <= 50
    assert metrics.due_rows(ScheduledPing, 7) == 7  # below the cap: the count itself


# --- "needs attention" --------------------------------------------------------------------------


def listed_pks(client: Client, url: str) -> set[int]:
    response = client.get(url)
    assert response.status_code == 200, url
    return {row.pk for row in response.context["cl"].result_list}


def test_needs_attention_lists_late_models_and_rows_not_handled_in_time(admin_client, limits):
    due = set(make_due_pings(2, ago=timedelta(seconds=45)))
    ScheduledPingFactory(due_at=timezone.now() + timedelta(hours=1))  # pending, not due
    stalled = {row.pk for row in delivered_pings(3, ago=timedelta(minutes=15))}
    delivered_pings(1, ago=timedelta(minutes=2))  # awaiting, within the timeout

    response = admin_client.get(ATTENTION)
    page = response.content.decode()
    [late] = response.context["late"]
    [not_handled] = response.context["not_handled"]

    assert (late.model, late.due) == (PING, 2)
    assert 45 <= late.alarms.late_seconds < 120
    assert (not_handled.model, not_handled.not_handled, not_handled.awaiting) == (PING, 3, 4)
    assert 'id="attention-late"' in page
    assert 'id="attention-not-handled"' in page
    assert "3 not handled</a>" in page
    assert re.search(r'<td class="alarm-cell">\d+ s</td>', page)
    assert "No failed rows." in page
    assert listed_pks(admin_client, late.due_url) == due
    assert listed_pks(admin_client, not_handled.not_handled_url) == stalled


def test_needs_attention_says_when_nothing_needs_it(admin_client, limits):
    make_due_pings(1, ago=timedelta(seconds=2))
    delivered_pings(1, ago=timedelta(minutes=1))

    response = admin_client.get(ATTENTION)

    assert (response.context["late"], response.context["not_handled"]) == ([], [])
    assert "Nothing needs attention" in response.content.decode()


def test_an_effect_in_flight_past_the_timeout_is_an_alarm_with_its_own_link(admin_client, limits):
    started = timezone.now() - timedelta(hours=1)
    stuck, recent = (
        ScheduledOnce.objects.create(
            ping=PingFactory(),
            due_at=started,
            status=Status.DELIVERED,
            delivered_at=started,
            effect_started_at=at,
        )
        for at in (started, timezone.now())
    )

    page = admin_client.get(ATTENTION).content.decode()
    dashboard = figures(admin_client, "testapp.scheduledonce")

    assert dashboard["not_handled_in_time"] == 1
    assert "1 in flight" in page
    link = re.search(r'<a href="([^"]+)">1 in flight</a>', page).group(1).replace("&amp;", "&")
    listed = admin_client.get(link).content.decode()
    assert f"{stuck.pk} v1" in listed or stuck.event_id in listed
    assert recent.event_id not in listed
