"""The schedules' table leaves room on its pages for the sweep's bookkeeping updates."""

import pytest
from django.db import connection

from scheduling.recurring.models import RecurringSchedule


@pytest.mark.django_db
def test_the_schedules_pages_keep_a_tenth_free_for_heap_only_updates():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reloptions FROM pg_class WHERE oid = %s::regclass",
            [RecurringSchedule._meta.db_table],
        )
        (options,) = cursor.fetchone()

    assert "fillfactor=90" in options
