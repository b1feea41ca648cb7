"""A handled row's page says "Handled" as the list does (never "Delivered"), and shows its
timeline before the fields."""

import pytest
from django.utils import timezone

from scheduling.delivery.testing import run_due
from tests.factories import ScheduledPingFactory
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db


def test_a_handled_row_reads_handled_with_its_timeline_first(admin_client):
    row = ScheduledPingFactory(due_at=timezone.now())
    run_due(ScheduledPing)

    page = admin_client.get(f"/admin/testapp/scheduledping/{row.pk}/change/").content.decode()

    assert "Delivered</div>" not in page  # the status; "Delivered at" is the publication time
    assert "(handled)" in page  # the row's name, in the title and breadcrumbs
    assert page.index('id="timeline"') < page.index("field-due_at")
    assert '<div class="readonly">Handled</div>' in page[page.index("field-state") :]
