"""A row's history a page at a time: the REST history pages (oldest first, `next` links) whose
entries are the whole timeline's, in order, with the column entries (scheduled, published,
handled) in their places; the admin's change page shows the latest entries and links the rest.
A row with 20,000 entries costs a page's work, not the whole history's."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling.ops.admin.timeline import TIMELINE_SHOWN
from scheduling.ops.api.pagination import HISTORY_PAGE_SIZE, MAX_LIMIT
from scheduling.rows.history.models import EventHistory, Kind
from scheduling.rows.history.record import written_for
from scheduling.rows.history.timeline import (
    ORDER,
    Entry,
    from_columns,
    timeline,
    timeline_count,
    timeline_page,
)
from tests.factories import ScheduledPingFactory
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db

URL = "/api/events/testapp/scheduledping/{}/history/"
LABEL = "testapp.scheduledping"


def with_entries(count: int, *, delivered: bool = False) -> ScheduledPing:
    """A row with `count` logged entries a second apart, from its creation on, some of them at
    one instant (a transaction's), whose kinds then read in lifecycle order."""
    row: ScheduledPing = ScheduledPingFactory()  # type: ignore[assignment]
    kinds = [Kind.HANDLING_FAILED, Kind.REDELIVERED, Kind.PUBLISHED, Kind.RESCHEDULED]
    start = row.created_at
    EventHistory.objects.bulk_create(
        EventHistory(
            model=LABEL,
            row_id=row.pk,
            at=start + timedelta(seconds=n // 3),
            kind=kinds[n % len(kinds)],
            attempt=n,
            detail={"before": start.isoformat()} if kinds[n % 4] == Kind.RESCHEDULED else {},
        )
        for n in range(count)
    )
    if delivered:  # published at one of the logged instants, and handled at another
        at = start + timedelta(seconds=count // 6)
        ScheduledPing.objects.filter(pk=row.pk).update(delivered_at=at, handled_at=at)
        row.refresh_from_db()
    return row


def whole_in_memory(row: ScheduledPing) -> list[Entry]:
    """The oracle: every logged entry and the column entries, sorted in memory."""
    logged = [Entry.logged(e) for e in written_for(ScheduledPing, row.pk).order_by("at", "pk")]
    entries = [*logged, *from_columns(row, logged)]
    return sorted(entries, key=lambda entry: (entry.at, ORDER[entry.kind]))


@pytest.mark.parametrize("delivered", [False, True])
def test_pages_put_together_are_the_whole_timeline(delivered):
    row = with_entries(47, delivered=delivered)
    whole = timeline(row)
    assert whole == whole_in_memory(row)

    pages = [timeline_page(row, offset=at, limit=5) for at in range(0, len(whole) + 5, 5)]

    assert [entry for page in pages for entry in page] == whole
    # Scheduled, and handled: the publish is logged at delivered_at already (counted once).
    assert timeline_count(row) == len(whole) == 47 + (2 if delivered else 1)
    assert [(e.at, ORDER[e.kind]) for e in whole] == sorted((e.at, ORDER[e.kind]) for e in whole)


def test_the_rest_history_is_a_page_with_a_next_link(api):
    row = with_entries(250)

    first = api.get(URL.format(row.pk)).json()
    second = api.get(first["next"]).json()

    assert first["count"] == 251
    assert len(first["results"]) == HISTORY_PAGE_SIZE
    assert first["results"][0]["kind"] == "scheduled"  # oldest first
    assert first["previous"] is None
    assert "offset=100" in first["next"]
    assert second["results"][0]["attempt"] == HISTORY_PAGE_SIZE - 1
    last = api.get(URL.format(row.pk), {"offset": 200, "limit": 100}).json()
    assert (len(last["results"]), last["next"]) == (51, None)


def test_a_page_is_at_most_the_documented_size(api):
    row = with_entries(MAX_LIMIT + 10)

    page = api.get(URL.format(row.pk), {"limit": 10**6}).json()

    assert len(page["results"]) == MAX_LIMIT
    assert page["next"] is not None


def test_a_page_of_a_long_history_reads_a_page_of_rows():
    row = with_entries(20_000)

    with CaptureQueriesContext(connection) as queries:
        page = timeline_page(row, offset=19_000, limit=MAX_LIMIT)

    assert len(page) == MAX_LIMIT
    assert len(queries) <= 6
    [rows] = [q["sql"] for q in queries if "LIMIT 1000" in q["sql"]]
    assert "OFFSET 18999" in rows  # the one column entry (scheduled) sorts before them all


def test_the_admin_shows_the_latest_entries_and_links_the_rest(admin_client):
    row = with_entries(TIMELINE_SHOWN + 30)

    page = admin_client.get(f"/admin/testapp/scheduledping/{row.pk}/change/").content.decode()

    assert page.count('class="timeline-') == TIMELINE_SHOWN
    assert f"The latest {TIMELINE_SHOWN} of {TIMELINE_SHOWN + 31} entries" in page
    assert URL.format(row.pk) in page
