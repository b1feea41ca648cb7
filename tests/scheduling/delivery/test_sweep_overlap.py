"""Behind a full batch the sweep claims and publishes on a second connection as well; every row
is still published once, in its own batch's transaction, and a refused row is set aside once."""

import pytest
from django.test import override_settings

from scheduling.delivery.sweep.run import sweep
from scheduling.rows.models import ScheduledEvent
from tests.conftest import queued_task_ids
from tests.factories import make_due_pings
from tests.testapp.models import ScheduledPing

Status = ScheduledEvent.Status

pytestmark = pytest.mark.django_db(transaction=True)


@override_settings(SCHEDULING_BATCH_SIZE=10)
def test_a_backlog_is_published_once_over_two_connections(broker):
    pks = make_due_pings(95)

    # A budget no loaded machine runs out of: the claim here is about correctness, not speed.
    result = sweep(ScheduledPing, time_budget=120)

    assert (result.delivered, result.failed, result.drained) == (95, 0, True)
    published = queued_task_ids(broker, "testapp")
    assert sorted(published) == sorted(f"testapp.scheduledping:{pk}:v1" for pk in pks)
    rows = ScheduledPing.objects.filter(pk__in=pks)
    assert set(rows.values_list("status", "attempts")) == {(Status.DELIVERED, 1)}


@override_settings(SCHEDULING_BATCH_SIZE=10)
def test_a_row_the_broker_refuses_is_set_aside_once_while_the_rest_go(broker):
    pks = make_due_pings(45)
    broker.set("testapp", "not a list")  # WRONGTYPE for every push to the queue

    result = sweep(ScheduledPing)

    assert (result.delivered, result.retrying) == (0, 45)
    rows = ScheduledPing.objects.filter(pk__in=pks)
    assert set(rows.values_list("status", "attempts")) == {(Status.PENDING, 1)}
