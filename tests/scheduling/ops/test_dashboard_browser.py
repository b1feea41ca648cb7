"""The dashboard and the busiest lists in a real browser (Debian's Chromium, headless)."""

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.utils import timezone
from playwright.sync_api import sync_playwright

from purchases.services import purchase_create
from scheduling.delivery import metrics
from scheduling.jobs.services import job_put
from scheduling.rows.states import Status
from tests.conftest import ROOT, admin_browser_page
from tests.factories import ScheduledPingFactory, make_due_pings
from tests.purchases.factories import CustomerFactory, ReleaseFactory, TrackFactory
from tests.scheduling.ops.conftest import record_an_hour
from tests.testapp.models import Ping, ScheduledOnce

LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]"}
SCREENSHOT = ROOT / "docs" / "dashboard.png"


def watch(page, seen: list[tuple[int, str]]) -> None:
    """Every response's status and URL; a request that got no response counts as 599 (0 when
    the page's policy refused it before it was sent)."""
    page.wait_for_load_state()  # the page before (the sign-in's redirect) is done loading
    page.on("response", lambda response: seen.append((response.status, response.url)))
    page.on("requestfailed", lambda request: seen.append((failed(request.failure), request.url)))


CSP_BLOCKED = 0  # refused by the page's Content-Security-Policy: never left the browser


def failed(reason: str | None) -> int:
    return CSP_BLOCKED if reason == "csp" else 599


def bad(seen: list[tuple[int, str]]) -> list[tuple[int, str]]:
    sent = [(status, url) for status, url in seen if status != CSP_BLOCKED]
    return [(status, url) for status, url in sent if status >= 400 or not local(url)]


def local(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("data", "blob") or parts.hostname in LOCAL_HOSTS


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_dashboard_draws_its_charts_from_local_assets_and_refreshes(
    live_server, admin_user, chromium_path, settings
):
    settings.SCHEDULING_HEALTH_MAX_LATENESS = 600  # a calm day: the due row is not late yet
    record_an_hour()
    ScheduledPingFactory(due_at=timezone.now() - timedelta(seconds=40))
    ScheduledPingFactory(status=Status.FAILED)
    seen: list[tuple[int, str]] = []

    # No ORM calls inside this block: Playwright's sync API runs an event loop in this thread.
    with sync_playwright() as playwright:
        browser, page = admin_browser_page(playwright, chromium_path, live_server.url)
        page.set_viewport_size({"width": 1280, "height": 1000})
        page.goto(f"{live_server.url}/admin/")
        link = page.get_attribute(".app-scheduling a:text('Dashboard')", "href")
        watch(page, seen)
        page.goto(f"{live_server.url}{link}")
        page.wait_for_function("window.Chart && Object.keys(Chart.instances).length > 0")
        charts = page.evaluate("Object.keys(Chart.instances).length")
        canvases = page.locator("canvas[data-chart]").count()
        with page.expect_response(lambda r: "/dashboard/data/" in r.url, timeout=20_000) as data:
            pass
        refreshed = data.value.json()
        status = page.inner_text("#dashboard-status")
        summary = page.inner_text("#dashboard-summary")
        SCREENSHOT.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOT))  # the first screen: the table, the busiest model
        browser.close()

    assert charts == canvases >= 9  # three per scheduled model
    assert any(m["last_day"]["published"] > 0 for m in refreshed["models"])
    assert "refresh every 10 s" in status
    assert "failed" not in status
    assert "Scheduled pings" in summary
    assert "Late:" not in summary
    assert not bad(seen), bad(seen)
    assert any(url.endswith("/static/admincharts/chart.min.js") for _, url in seen)
    assert Path(SCREENSHOT).stat().st_size > 10_000


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_scheduled_purchase_and_job_lists_fit_1280_pixels(
    live_server, admin_user, chromium_path
):
    release = ReleaseFactory(title="A rather long album title, deluxe edition")
    TrackFactory(release=release, title="Bonus track", release_date=release.release_date)
    for _ in range(3):
        purchase_create(customer=CustomerFactory(), release=release)
    at = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
    job_put(
        key="team-7.training-42.questionnaire-reminder",
        schedules=[at, at + timedelta(hours=1)],
        callback={"type": "queue", "queue": "reminders"},
        payload={"training": {"id": 42}},
        labels={"team": "7"},
    )
    widths = {}

    with sync_playwright() as playwright:
        browser, page = admin_browser_page(playwright, chromium_path, live_server.url)
        page.set_viewport_size({"width": 1280, "height": 900})
        for name in ("purchases/scheduledpurchase", "scheduling_jobs/job"):
            page.goto(f"{live_server.url}/admin/{name}/")
            widths[name] = page.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
            )
        browser.close()

    for name, (scroll, client) in widths.items():
        assert scroll <= client, f"{name} scrolls sideways: {scroll} > {client}"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_api_docs_load_nothing_from_another_host(live_server, admin_user, chromium_path):
    seen: list[tuple[int, str]] = []

    with sync_playwright() as playwright:
        browser, page = admin_browser_page(playwright, chromium_path, live_server.url)
        watch(page, seen)
        page.goto(f"{live_server.url}/api/docs/")
        page.wait_for_selector(".swagger-ui .opblock", timeout=20_000)
        page.goto(f"{live_server.url}/api/redoc/")
        page.wait_for_selector("[role=search], .menu-content", timeout=20_000)
        browser.close()

    assert not bad(seen), bad(seen)
    assert any("/api/schema/" in url for _, url in seen)
    # ReDoc's footer logo, refused by the page's img-src policy; ReDoc then leaves it out.
    assert [url for status, url in seen if status == CSP_BLOCKED] == [
        "https://cdn.redoc.ly/redoc/logo-mini.svg"
    ]


ALARM_SCREENSHOT = ROOT / "docs" / "dashboard-alarm.png"
ATTENTION_SCREENSHOT = ROOT / "docs" / "attention-alarm.png"
PING_ROW = '#dashboard-summary tr[data-model="testapp.scheduledping"]'
ONCE_ROW = '#dashboard-summary tr[data-model="testapp.scheduledonce"]'


def a_stalled_worker() -> None:
    """No worker and no sweeper: pings due minutes ago never swept, pings published 15 minutes
    ago never handled; beside them a model whose backlog is being published."""
    now = timezone.now()
    make_due_pings(2, ago=timedelta(minutes=5))
    published = now - timedelta(minutes=15)
    ScheduledPingFactory.create_batch(
        3, status=Status.DELIVERED, delivered_at=published, due_at=published
    )
    pings = Ping.objects.bulk_create(Ping(name=f"once-{i}") for i in range(600))
    ScheduledOnce.objects.bulk_create(ScheduledOnce(ping=ping, due_at=now) for ping in pings)
    # What a sweep publishing this model recorded a moment ago (outside a transaction: now).
    metrics.record_published(ScheduledOnce, [ScheduledOnce(due_at=now)] * 120, cutoff=now)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_stalled_worker_shows_in_alarm_on_the_dashboard_and_needs_attention(
    live_server, admin_user, chromium_path, settings
):
    settings.SCHEDULING_HEALTH_MAX_LATENESS = 60
    settings.SCHEDULING_HANDLING_TIMEOUT = 600
    a_stalled_worker()

    # No ORM calls inside this block: Playwright's sync API runs an event loop in this thread.
    with sync_playwright() as playwright:
        browser, page = admin_browser_page(playwright, chromium_path, live_server.url)
        page.set_viewport_size({"width": 1280, "height": 1000})
        page.goto(f"{live_server.url}/admin/scheduling/dashboard/")
        page.wait_for_function("window.Chart && Object.keys(Chart.instances).length > 0")
        # The figures refreshed: the alarms below are the script's, not only the HTML's.
        with page.expect_response(lambda r: "/dashboard/data/" in r.url, timeout=20_000) as data:
            pass
        shown = "at => document.getElementById('scheduling-dashboard').dataset.generatedAt === at"
        page.wait_for_function(shown, arg=data.value.json()["generated_at"])
        ping_class = page.get_attribute(PING_ROW, "class")
        ping_tint = page.eval_on_selector(
            f"{PING_ROW} > td", "e => getComputedStyle(e).backgroundColor"
        )
        once_tint = page.eval_on_selector(
            f"{ONCE_ROW} > td", "e => getComputedStyle(e).backgroundColor"
        )
        ping_labels = page.inner_text(f"{PING_ROW} [data-alarms]")
        ping_backlog = page.inner_text(f"{PING_ROW} [data-field='backlog.text']")
        once_backlog = page.inner_text(f"{ONCE_ROW} [data-field='backlog.text']")
        banner = page.inner_text("#dashboard-alarm-summary")
        page.screenshot(path=str(ALARM_SCREENSHOT))

        page.click("#dashboard-alarm-summary a")
        late = page.inner_text("#attention-late")
        not_handled = page.inner_text("#attention-not-handled")
        page.screenshot(path=str(ATTENTION_SCREENSHOT), full_page=True)
        page.click("#attention-not-handled a")
        page.wait_for_selector("#result_list")
        listed = page.locator("#result_list tbody tr").count()
        browser.close()

    assert ping_class == "alarm"
    assert ping_tint != once_tint  # the row in alarm stands out...
    assert "Late: the oldest due row waits 3" in ping_labels  # ...and says why in words
    assert "(limit 60 s)" in ping_labels
    assert "Stalled: 3 rows not handled within 600 s" in ping_labels
    assert ping_backlog == "no progress"
    assert re.fullmatch(r"done in ~\d+ min \(at \d\d:\d\d\)", once_backlog), once_backlog
    assert "1 model late, not swept or not handled in time" in banner
    assert "Scheduled pings" in late
    assert re.search(r"\b3\d\d s\b", late), late  # five minutes and some
    assert "Scheduled pings" in not_handled
    assert "3 not handled" in not_handled
    assert listed == 3
    assert Path(ALARM_SCREENSHOT).stat().st_size > 10_000
