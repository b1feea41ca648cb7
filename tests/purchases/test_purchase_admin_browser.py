"""The admin reschedule action, driven in a real browser (Debian's Chromium, headless)."""

from datetime import UTC, datetime

import pytest
from playwright.sync_api import sync_playwright

from purchases.models import ScheduledPurchase
from purchases.services import purchase_create
from tests.conftest import admin_browser_page
from tests.purchases.factories import ArtistFactory, CustomerFactory, ReleaseFactory

RELEASE_DAY = datetime(2030, 3, 1, 9, 0, tzinfo=UTC)


def sold_by(artist):
    release = ReleaseFactory(artist=artist, release_date=RELEASE_DAY)
    return purchase_create(customer=CustomerFactory(), release=release).scheduled.get()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_admin_reschedules_an_artists_rows_in_the_browser(
    live_server, admin_user, chromium_path
):
    artist = ArtistFactory()
    mine = [sold_by(artist), sold_by(artist)]
    other = sold_by(ArtistFactory())
    changelist = f"{live_server.url}/admin/purchases/scheduledpurchase/"

    # No ORM calls inside this block: Playwright's sync API runs an event loop in this thread.
    with sync_playwright() as playwright:
        browser, page = admin_browser_page(playwright, chromium_path, live_server.url)
        page.goto(f"{changelist}?purchase__release__artist__id__exact={artist.pk}")
        page.check("#action-toggle")
        page.select_option("select[name=action]", "reschedule_rows")
        page.click("button[name=index]")
        page.fill("input[name=due_at]", "2031-05-01T12:00:00+02:00")
        page.click("input[name=apply]")
        message = page.inner_text("ul.messagelist")
        browser.close()

    assert message == "Rescheduled 2 scheduled purchases."
    for row in mine:
        row.refresh_from_db()
        assert (row.due_at, row.version) == (datetime(2031, 5, 1, 10, 0, tzinfo=UTC), 2)
    other.refresh_from_db()
    assert (other.due_at, other.version) == (RELEASE_DAY, 1)
    assert ScheduledPurchase.objects.count() == 3
