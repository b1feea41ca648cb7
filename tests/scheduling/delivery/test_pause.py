"""Pausing a model's delivery: its sweeps claim nothing while other models go on, its due rows
stay pending with their due time, and resuming publishes the backlog at the model's rate."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError, connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from scheduling.delivery.pauses import services
from scheduling.delivery.pauses.models import DeliveryPause, DeliveryPauseEntry
from scheduling.delivery.pauses.services import delivery_pause, delivery_resume, is_paused
from scheduling.delivery.sweep.daemon import Daemon
from scheduling.delivery.sweep.run import sweep
from scheduling.delivery.tasks import sweep_task
from scheduling.rows.actors import actor
from tests.conftest import queued_task_ids
from tests.factories import make_due_notices, make_due_pings
from tests.remoteapp.models import ScheduledReminder
from tests.testapp.models import ScheduledNotice, ScheduledPing

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

Status = ScheduledPing.Status


def pending_due_times() -> list:
    return list(
        ScheduledPing.objects.filter(status=Status.PENDING).values_list("due_at", flat=True)
    )


def test_a_paused_model_publishes_nothing_and_keeps_its_due_times(broker):
    make_due_pings(5)
    before = sorted(pending_due_times())
    delivery_pause(model=ScheduledPing, reason="mail provider down")

    result = sweep(ScheduledPing)

    assert (result.paused, result.delivered, result.batches) == (True, 0, 0)
    assert sorted(pending_due_times()) == before
    assert queued_task_ids(broker, "testapp") == []


def test_a_tick_skips_the_paused_model_and_sweeps_the_others_reading_the_pauses_once(broker):
    pings = make_due_pings(3)
    make_due_notices(2)
    delivery_pause(model=ScheduledPing)
    host = Daemon([ScheduledPing, ScheduledNotice], slots=[0])

    with CaptureQueriesContext(connection) as queries:
        host.tick()

    pause_reads = [q for q in queries.captured_queries if "scheduling_delivery_pause" in q["sql"]]
    assert len(pause_reads) == 1
    assert ScheduledNotice.objects.filter(status=Status.DELIVERED).count() == 2
    assert broker.llen("notices") == 2
    assert ScheduledPing.objects.filter(status=Status.PENDING).count() == len(pings)

    delivery_resume(model=ScheduledPing)
    host.tick()

    assert sorted(queued_task_ids(broker, "testapp")) == sorted(
        row.event_id for row in ScheduledPing.objects.all()
    )


def test_a_tick_with_nothing_paused_reads_the_pauses_once():
    host = Daemon([ScheduledPing, ScheduledNotice], slots=[0, 1])

    with CaptureQueriesContext(connection) as queries:
        host.tick()

    assert sum("scheduling_delivery_pause" in q["sql"] for q in queries.captured_queries) == 1


@override_settings(SCHEDULING_SWEEP_HOLD=0.0)
def test_beats_sweep_task_honours_the_pause(broker):
    make_due_pings(4)
    delivery_pause(model=ScheduledPing)

    assert sweep_task("testapp.ScheduledPing")["paused"] is True
    assert broker.llen("testapp") == 0

    delivery_resume(model=ScheduledPing)
    assert sweep_task("testapp.ScheduledPing")["delivered"] == 4
    assert broker.llen("testapp") == 4


@override_settings(SCHEDULING_RATE_LIMITS={"testapp.ScheduledPing": "100/s"})
def test_resuming_publishes_the_backlog_at_the_models_rate_limit(broker):
    make_due_pings(30)
    delivery_pause(model=ScheduledPing)
    assert sweep(ScheduledPing).delivered == 0
    delivery_resume(model=ScheduledPing)

    first = sweep(ScheduledPing, time_budget=0.001)  # one burst of the limit: 10 rows
    rest = sweep(ScheduledPing)

    assert (first.delivered, first.drained) == (10, False)
    assert (rest.delivered, rest.drained) == (20, True)
    assert rest.rate_wait > 0


def test_a_model_on_another_database_is_paused_from_the_default_one():
    delivery_pause(model=ScheduledReminder)

    assert DeliveryPause.objects.using("default").filter(model="remoteapp.scheduledreminder")
    assert is_paused(ScheduledReminder)
    assert sweep(ScheduledReminder).paused


def test_who_paused_when_and_why_is_kept_and_the_history_records_both():
    with actor("ops:alice"):
        pause = delivery_pause(model=ScheduledPing, reason="label dispute")
        again = delivery_pause(model=ScheduledPing, reason="second thoughts")
    with actor("ops:bob"):
        assert delivery_resume(model=ScheduledPing, reason="settled")
        assert not delivery_resume(model=ScheduledPing)

    assert (again.pk, again.paused_by, again.reason) == (pause.pk, "ops:alice", "label dispute")
    assert pause.paused_at is not None
    entries = DeliveryPauseEntry.objects.order_by("at", "pk")
    assert [(e.action, e.actor, e.reason) for e in entries] == [
        ("paused", "ops:alice", "label dispute"),
        ("resumed", "ops:bob", "settled"),
    ]
    assert not DeliveryPause.objects.exists()


def test_the_commands_pause_and_resume_and_say_so():
    out = StringIO()
    call_command(
        "scheduling_pause", "testapp.ScheduledPing", "--reason", "provider down", stdout=out
    )

    assert is_paused(ScheduledPing)
    line = out.getvalue()
    assert line.startswith("testapp.ScheduledPing: paused by command:")
    assert line.rstrip().endswith(": provider down")

    out = StringIO()
    call_command("scheduling_resume", "testapp.ScheduledPing", stdout=out)

    assert not is_paused(ScheduledPing)
    assert out.getvalue() == "testapp.ScheduledPing: delivering\n"


@pytest.mark.parametrize("command", ["scheduling_pause", "scheduling_resume"])
@pytest.mark.parametrize("label", ["testapp.Nothing", "Ping", "", "testapp.Ping"])
def test_the_commands_refuse_an_unknown_model_naming_it_and_the_form(command, label):
    with pytest.raises(CommandError) as refused:
        call_command(command, label)

    assert repr(label) in str(refused.value)
    assert "app_label.ModelName" in str(refused.value)
    assert "testapp.ScheduledPing" in str(refused.value)  # the models it accepts
    assert not DeliveryPause.objects.exists()


def test_a_tick_whose_pause_read_fails_lets_each_sweep_read_its_own(monkeypatch, broker):
    make_due_pings(2)
    make_due_notices(2)
    delivery_pause(model=ScheduledPing)
    reads = iter([OperationalError("the server closed the connection")])

    def failing_once() -> frozenset[str]:
        raise next(reads)

    monkeypatch.setattr(services, "paused_labels", failing_once)

    Daemon([ScheduledPing, ScheduledNotice], slots=[0]).tick()

    assert broker.llen("notices") == 2
    assert broker.llen("testapp") == 0  # its own lookup found the pause


def test_scheduling_status_says_which_model_is_paused():
    delivery_pause(model=ScheduledPing)
    out = StringIO()

    call_command("scheduling_status", stdout=out)

    lines = out.getvalue().splitlines()
    assert next(line for line in lines if "model=testapp.ScheduledPing " in line).endswith(
        " paused=True"
    )
    assert next(line for line in lines if "model=testapp.ScheduledNotice " in line).endswith(
        " paused=False"
    )
