"""The schedule form's fire-time preview follows what is typed, in a real browser."""

import pytest
from playwright.sync_api import sync_playwright

from scheduling.recurring.models import RecurringSchedule
from tests.conftest import admin_browser_page


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_preview_follows_the_cron_being_typed_before_saving(
    live_server, admin_user, chromium_path
):
    # No ORM calls inside this block: Playwright's sync API runs an event loop in this thread.
    with sync_playwright() as playwright:
        browser, page = admin_browser_page(playwright, chromium_path, live_server.url)
        page.goto(f"{live_server.url}/admin/scheduling_recurring/recurringschedule/add/")
        page.fill("#id_timezone", "Asia/Tokyo")
        page.fill("#id_cron", "30 7 * * *")
        page.wait_for_selector(".fire-preview li:nth-child(10)", timeout=15_000)
        times = page.locator(".fire-preview li").all_inner_texts()
        page.fill("#id_cron", "0 25 * * *")
        page.wait_for_selector(".fire-preview p", timeout=15_000)
        refusal = page.inner_text(".fire-preview")
        browser.close()

    assert len(times) == 10
    assert all(time.endswith("07:30:00 JST") for time in times)
    assert refusal.startswith("cron: ")
    assert not RecurringSchedule.objects.exists()
