"""The operators' dashboard: its figures come from real rows, sweeps and handlings."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from scheduling.delivery.handling.once import handle_once
from scheduling.delivery.metrics import MinuteBucket
from scheduling.delivery.sweep.run import sweep
from scheduling.ops.admin.dashboard import merged
from scheduling.rows.states import Status
from tests.factories import ScheduledPingFactory, make_due_pings
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db
DATA = "/admin/scheduling/dashboard/data/"
PAGE = "/admin/scheduling/dashboard/"
PING = "testapp.scheduledping"


def figures(client: Client, model: str = PING) -> dict:
    response = client.get(DATA)
    assert response.status_code == 200
    return next(m for m in response.json()["models"] if m["model"] == model)


def handle(row: ScheduledPing, *, fail: bool = False) -> None:
    event = row.to_event(published_at=timezone.now().isoformat())
    with pytest.raises(RuntimeError) if fail else _nothing(), handle_once(event):
        if fail:
            raise RuntimeError("handler broke")


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_the_figures_are_the_rows_swept_and_handled(
    admin_client, django_capture_on_commit_callbacks
):
    make_due_pings(3, ago=timedelta(minutes=4))
    ScheduledPingFactory(due_at=timezone.now() + timedelta(hours=1))
    ScheduledPingFactory(status=Status.FAILED)
    with django_capture_on_commit_callbacks(execute=True):
        result = sweep(ScheduledPing)
    published = list(ScheduledPing.objects.filter(status=Status.DELIVERED).order_by("pk"))
    with django_capture_on_commit_callbacks(execute=True):
        handle(published[0])
    with django_capture_on_commit_callbacks(execute=True):
        handle(published[1], fail=True)

    shown = figures(admin_client)

    assert result.delivered == 3
    assert (shown["pending"], shown["due_now"], shown["failed_rows"]) == (
        ScheduledPing.objects.pending().count(),
        0,
        1,
    )
    assert shown["awaiting_handling"] == ScheduledPing.objects.awaiting_handling().count()
    expected = {"published": 3, "handled": 1, "handle_failures": 1}
    assert shown["last_hour"] == shown["last_day"] == expected
    assert len(shown["minutes"]["t"]) == 60
    assert len(shown["day"]["t"]) == 96
    assert sum(shown["minutes"]["published"]) == sum(shown["day"]["published"]) == 3
    # Four minutes late: in the histogram bucket between 120 s and 300 s.
    p50 = [v for v in shown["minutes"]["lateness_p50"] if v is not None]
    assert len(p50) == 1
    assert 120 < p50[0] <= 300
    assert shown["links"]["failed"].endswith("/testapp/scheduledping/?lifecycle=failed")
    assert shown["links"]["awaiting_handling"].endswith("?lifecycle=awaiting_handling")


def test_an_overdue_row_shows_as_due_now_with_its_lateness(admin_client):
    make_due_pings(2, ago=timedelta(minutes=10))

    shown = figures(admin_client)

    assert (shown["pending"], shown["due_now"]) == (2, 2)
    assert 590 < shown["oldest_due_seconds"] < 700
    assert shown["last_hour"] == {"published": 0, "handled": 0, "handle_failures": 0}


def test_the_page_shows_the_table_links_and_the_chart_library(admin_client):
    ScheduledPingFactory(status=Status.FAILED)

    page = admin_client.get(PAGE).content.decode()

    assert 'src="/static/admincharts/chart.min.js"' in page
    assert 'src="/static/scheduling/dashboard.js"' in page
    assert 'href="/admin/testapp/scheduledping/?lifecycle=failed"' in page
    assert 'id="dashboard-data"' in page
    assert "//" not in page.split("<body")[0].replace("http://www.w3.org", "")  # no CDN


def test_the_admin_index_links_the_dashboard_and_the_attention_page_in_one_scheduling_box(
    admin_client,
):
    page = admin_client.get("/admin/").content.decode()

    assert page.count('class="app-scheduling module') == 1
    box = page.split('class="app-scheduling module', 1)[1].split("</table>", 1)[0]
    assert f'href="{PAGE}"' in box
    assert 'href="/admin/scheduling/attention/"' in box
    assert "Calendars" in box  # the app's own models below the pages
    captions = re.findall(r"<caption>\s*<a[^>]*>([^<]*)</a>", page)
    assert [c for c in captions if c.strip().startswith("Scheduling")].count("Scheduling") == 1


def staff_with(*codenames: str) -> Client:
    user = User.objects.create_user(f"staff-{User.objects.count()}", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def test_each_role_sees_only_the_models_it_may_view(admin_client):
    anonymous = Client().get(DATA)
    nothing = staff_with().get(DATA).json()["models"]
    viewer = staff_with("view_scheduledping").get(DATA).json()["models"]
    everything = admin_client.get(DATA).json()["models"]

    assert anonymous.status_code == 302
    assert "/admin/login/" in anonymous["Location"]
    assert nothing == []
    assert [m["model"] for m in viewer] == [PING]
    assert {PING, "purchases.scheduledpurchase", "scheduling_jobs.scheduledjobrun"} <= {
        m["model"] for m in everything
    }
    assert Client().get(PAGE).status_code == 302


def test_a_day_point_merges_fifteen_minutes():
    start = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    minutes = [
        MinuteBucket(start, 10, 9, 1, 1.0, 2.0),
        MinuteBucket(start + timedelta(minutes=1), 30, 30, 0, 3.0, 9.0),
        MinuteBucket(start + timedelta(minutes=2), 0, 0, 0, None, None),
    ]

    point = merged(minutes)

    assert (point.minute, point.published, point.handled, point.handle_failures) == (
        start,
        40,
        39,
        1,
    )
    assert point.lateness_p50 == pytest.approx(2.5)  # weighted by what each minute published
    assert point.lateness_p99 == 9.0  # the worst minute


def test_without_the_chart_app_installed_the_dashboard_serves_chart_js_itself(
    admin_client, settings
):
    settings.INSTALLED_APPS = [app for app in settings.INSTALLED_APPS if app != "admincharts"]

    page = admin_client.get(PAGE).content.decode()
    script = admin_client.get("/admin/scheduling/dashboard/chart.js")

    assert 'src="/admin/scheduling/dashboard/chart.js"' in page
    assert script.status_code == 200
    assert script["Content-Type"].startswith("text/javascript")
    assert b"Chart.js v3" in script.content
    assert Client().get("/admin/scheduling/dashboard/chart.js").status_code == 302


def test_without_a_redis_cache_the_page_says_why_the_counted_figures_read_zero(
    admin_client, settings
):
    make_due_pings(2)
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

    page = admin_client.get(PAGE).content.decode()
    payload = admin_client.get(DATA).json()

    assert "No counters in this mode" in page
    assert "embedded mode" in payload["counters_missing"]
    assert figures(admin_client)["due_now"] == 2  # from the database: still current


def test_with_redis_the_page_has_no_such_note(admin_client):
    assert admin_client.get(DATA).json()["counters_missing"] == ""
    assert "No counters in this mode" not in admin_client.get(PAGE).content.decode()
