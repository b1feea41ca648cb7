import pytest

from scheduling.models import ScheduledEvent
from tests.factories import ScheduledPingFactory
from tests.testapp.models import PingEffect, ScheduledPing
from tests.testapp.tasks import handle_ping

pytestmark = pytest.mark.django_db

Status = ScheduledEvent.Status


def event_for(row, version=None):
    version = version or row.version
    event_id = f"testapp.scheduledping:{row.pk}:v{version}"
    return {"id": event_id, "model": "testapp.scheduledping", "pk": row.pk, "version": version}


def test_it_handles_a_delivered_event_once_and_records_handled_at():
    row = ScheduledPingFactory(status=Status.DELIVERED)

    assert handle_ping(event_for(row)) == "handled"
    assert handle_ping(event_for(row)) == "skipped"

    row.refresh_from_db()
    assert row.handled_at is not None
    assert PingEffect.objects.count() == 1


def test_it_skips_an_event_whose_row_is_still_pending():
    # Published by a sweep whose commit then failed: the row is published again later.
    row = ScheduledPingFactory(status=Status.PENDING)

    assert handle_ping(event_for(row)) == "skipped"
    assert PingEffect.objects.count() == 0


def test_it_skips_a_stale_version():
    row = ScheduledPingFactory(status=Status.DELIVERED, version=2)

    assert handle_ping(event_for(row, version=1)) == "skipped"
    assert PingEffect.objects.count() == 0


@pytest.mark.parametrize("status", [Status.CANCELLED, Status.EXPIRED, Status.FAILED])
def test_it_skips_rows_that_were_not_delivered(status):
    row = ScheduledPingFactory(status=status)

    assert handle_ping(event_for(row)) == "skipped"


def test_it_skips_a_deleted_row():
    row = ScheduledPingFactory(status=Status.DELIVERED)
    event = event_for(row)
    ScheduledPing.objects.filter(pk=row.pk).delete()

    assert handle_ping(event) == "skipped"


def test_a_failing_effect_leaves_the_event_unhandled_for_a_retry():
    from scheduling.handling import handle_once

    row = ScheduledPingFactory(status=Status.DELIVERED)

    def send_but_smtp_is_down():
        with handle_once(event_for(row)) as handled:
            assert handled is not None
            raise RuntimeError("smtp down")

    with pytest.raises(RuntimeError):
        send_but_smtp_is_down()

    row.refresh_from_db()
    assert row.handled_at is None
    assert handle_ping(event_for(row)) == "handled"


def test_it_refuses_an_event_of_another_model():
    from scheduling.handling import handle_once
    from tests.testapp.models import ScheduledPing

    row = ScheduledPingFactory(status=Status.DELIVERED)
    event = {**event_for(row), "model": "purchases.scheduledpurchase"}

    with pytest.raises(ValueError, match=r"is not a testapp\.ScheduledPing event"):
        handle_once(event, ScheduledPing)


def test_handler_tasks_retry_failures_and_survive_worker_loss():
    from tests.testapp.tasks import handle_ping

    assert handle_ping.acks_late
    assert handle_ping.reject_on_worker_lost
    assert handle_ping.autoretry_for == (Exception,)
    assert handle_ping.max_retries >= 5
