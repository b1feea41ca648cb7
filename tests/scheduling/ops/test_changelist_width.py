"""At 1400 px, beside the filters, a scheduled model's changelist shows its last column: the
results table does not scroll sideways inside its box (Django's admin clips it there)."""

import pytest
from django.utils import timezone
from playwright.sync_api import sync_playwright

from purchases.services import purchase_create
from scheduling.delivery.testing import run_due
from scheduling.jobs.models import ScheduledJobRun
from tests.conftest import admin_browser_page
from tests.factories import ScheduledPingFactory
from tests.purchases.factories import CustomerFactory, ReleaseFactory
from tests.testapp.models import ScheduledPing
from tests.testapp.taskfuncs import add, fail

LISTS = ("purchases/scheduledpurchase", "scheduling_jobs/scheduledjobrun", "testapp/scheduledping")


@pytest.mark.django_db(transaction=True)
def test_the_changelists_show_every_column_at_1400_pixels(live_server, admin_user, chromium_path):
    release = ReleaseFactory(title="A rather long album title, deluxe edition")
    purchase_create(customer=CustomerFactory(email="a.long.address@example.com"), release=release)
    add.enqueue(1, 2)
    fail.enqueue("the mail server answered 451 Requested action aborted: local error")
    ScheduledPingFactory(due_at=timezone.now())
    run_due(ScheduledPing, ScheduledJobRun)  # a handled ping, a failed task's error
    widths = {}

    with sync_playwright() as playwright:
        browser, page = admin_browser_page(playwright, chromium_path, live_server.url)
        page.set_viewport_size({"width": 1400, "height": 900})
        for name in LISTS:
            page.goto(f"{live_server.url}/admin/{name}/")
            widths[name] = page.evaluate(
                "(() => { const box = document.querySelector('#changelist .results');"
                " return [box.scrollWidth, box.clientWidth]; })()"
            )
        browser.close()

    for name, (scroll, client) in widths.items():
        assert scroll <= client, f"{name} cuts its right columns: {scroll} > {client}"
