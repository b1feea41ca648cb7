"""A message whose worker died unacked is restored to its queue by the Redis transport."""

import pytest
from celery import current_app

from scheduling.delivery.sweep.run import sweep
from tests.conftest import queued_task_ids
from tests.factories import make_due_pings
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db


def test_an_unacked_message_the_transport_restores_goes_back_to_its_queue(broker):
    [pk] = make_due_pings(1)
    sweep(ScheduledPing)

    with current_app.connection_for_write() as conn:
        channel = conn.default_channel
        message = channel.basic_get("testapp", no_ack=False)  # taken, never acked
        assert broker.llen("testapp") == 0
        # What the visibility timeout does for a worker that died holding it. With the
        # exchange the sweep used to set, nothing was bound to it and the message was dropped.
        channel.qos.restore_by_tag(message.delivery_tag)

    assert queued_task_ids(broker, "testapp") == [f"testapp.scheduledping:{pk}:v1"]
