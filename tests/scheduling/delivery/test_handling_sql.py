"""The handling's statements, written as SQL, select what the ORM's conditions select."""

import pytest
from django.utils import timezone

from scheduling.delivery.handling.sql import statements_for
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.querysets import awaiting_handling_q, in_flight_q

pytestmark = pytest.mark.django_db

Status = ScheduledEvent.Status
NOW = timezone.now()
# (status, handled_at, effect_started_at): every combination the lifecycle knows.
STATES = [
    (status, handled, started)
    for status in Status.values
    for handled in (None, NOW)
    for started in (None, NOW)
]


@pytest.fixture
def rows(ping_model, ping_factory):
    return [
        ping_factory(status=status, handled_at=handled, effect_started_at=started)
        for status, handled, started in STATES
    ]


def test_a_claim_takes_exactly_the_rows_awaiting_handling(ping_model, rows):
    awaiting = set(ping_model.objects.filter(awaiting_handling_q()).values_list("pk", flat=True))
    statements = statements_for(ping_model)

    claimed = {row.pk for row in rows if statements.claim(row.pk, row.version)}

    assert claimed == awaiting
    assert not any(statements.claim(row.pk, row.version + 1) for row in rows)  # another version


def test_a_batch_row_is_taken_and_marked_handled_exactly_when_awaiting_handling(ping_model, rows):
    awaiting = set(ping_model.objects.filter(awaiting_handling_q()).values_list("pk", flat=True))
    statements = statements_for(ping_model)

    assert not any(statements.mark_handled_if_awaiting(row.pk, row.version + 1) for row in rows)
    taken = {row.pk for row in rows if statements.mark_handled_if_awaiting(row.pk, row.version)}

    assert taken == awaiting
    assert ping_model.objects.filter(pk__in=awaiting, handled_at__gt=NOW).count() == len(awaiting)


def test_the_claimed_row_is_found_and_marked_exactly_when_in_flight(ping_model, rows):
    in_flight = set(ping_model.objects.filter(in_flight_q()).values_list("pk", flat=True))
    statements = statements_for(ping_model)

    assert {row.pk for row in rows if statements.lock_claimed(row.pk, row.version)} == in_flight
    for row in rows:
        statements.mark_claimed_handled(row.pk, row.version)
    marked = ping_model.objects.filter(pk__in=in_flight, handled_at__gt=NOW)
    assert marked.count() == len(in_flight)


def test_the_lock_reads_the_row_as_the_orm_does(ping_model, rows):
    statements = statements_for(ping_model)

    for row in rows:
        locked = statements.lock(row.pk)
        assert locked is not None
        expected = ping_model.objects.get(pk=row.pk)
        assert [getattr(locked, f.attname) for f in ping_model._meta.concrete_fields] == [
            getattr(expected, f.attname) for f in ping_model._meta.concrete_fields
        ]
    assert statements.lock(-1) is None


def test_one_statement_marks_a_row_handled_and_claims_the_next(ping_model, ping_factory):
    statements = statements_for(ping_model)
    in_flight = ping_factory(status=Status.DELIVERED, effect_started_at=NOW)
    awaiting = ping_factory(status=Status.DELIVERED)
    handled = ping_factory(status=Status.DELIVERED, handled_at=NOW)

    assert statements.mark_handled_and_claim(in_flight, awaiting) is True
    assert statements.mark_handled_and_claim(awaiting, handled) is False  # nothing to claim

    rows = {row.pk: row for row in ping_model.objects.all()}
    assert rows[in_flight.pk].handled_at > NOW
    assert rows[awaiting.pk].handled_at > NOW  # claimed by the first, handled by the second
    assert rows[awaiting.pk].effect_started_at > NOW
    assert rows[handled.pk].effect_started_at is None  # not awaiting: not claimed


def test_a_row_of_another_version_is_neither_marked_nor_claimed(ping_model, ping_factory):
    statements = statements_for(ping_model)
    in_flight = ping_factory(status=Status.DELIVERED, effect_started_at=NOW)
    awaiting = ping_factory(status=Status.DELIVERED)
    in_flight.version, awaiting.version = 2, 2  # both moved since

    assert statements.mark_handled_and_claim(in_flight, awaiting) is False

    assert ping_model.objects.filter(handled_at__isnull=False).count() == 0
    assert ping_model.objects.filter(effect_started_at__isnull=True).count() == 1
