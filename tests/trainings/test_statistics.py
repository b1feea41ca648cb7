"""The planner's statistics the bulk moves of trainings' rows depend on (migration 0008)."""

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db


def test_analyze_reads_training_id_with_a_larger_sample():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attstattarget FROM pg_attribute"
            " WHERE attrelid = 'scheduled_training_notification'::regclass"
            " AND attname = 'training_id'"
        )
        assert cursor.fetchone()[0] == 1000
