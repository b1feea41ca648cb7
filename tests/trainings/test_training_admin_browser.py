"""The trainings' reminder list in a real browser at 1280 px: the business columns in view."""

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import sync_playwright

from tests.conftest import admin_browser_page
from tests.trainings.factories import PlayerFactory, TeamFactory
from trainings.models import ScheduledTrainingNotification
from trainings.services import training_create

START = datetime(2030, 1, 1, 18, 0, tzinfo=UTC)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_reminder_list_shows_its_business_columns_at_1280_pixels(
    live_server, admin_user, chromium_path
):
    team = TeamFactory(name="A team with a rather long name, under-21 squad")
    PlayerFactory.create_batch(3, team=team)
    training = training_create(
        team=team, start_at=START, end_at=START + timedelta(hours=2), invitations_enabled=True
    )
    error = "SMTPServerDisconnected: Connection unexpectedly closed " + "x" * 400
    ScheduledTrainingNotification.objects.filter(training=training).update(last_error=error)

    with sync_playwright() as playwright:
        browser, page = admin_browser_page(playwright, chromium_path, live_server.url)
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(f"{live_server.url}/admin/trainings/scheduledtrainingnotification/")
        widths = page.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        right_edges = {
            name: page.evaluate(
                f"document.querySelector('th.column-{name}').getBoundingClientRect().right"
            )
            for name in ("kind", "when", "training_start", "team", "state")
        }
        browser.close()

    scroll, client = widths
    assert scroll <= client, f"the list scrolls sideways: {scroll} > {client}"
    assert all(edge <= 1280 for edge in right_edges.values()), right_edges
