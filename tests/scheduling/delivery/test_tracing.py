"""Traces across days (docs/tracing.md): a row keeps the context it was created in; the sweep's
`send` span and the handler's `process` span link to it, whatever happened between (moves,
failures, retries); without an SDK nothing is kept or sent."""

from datetime import timedelta

import pytest
from django.utils import timezone
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from scheduling.delivery.sweep.run import sweep
from scheduling.rows.history.models import EventHistory
from scheduling.rows.tracing.models import CreationContext
from tests.conftest import queued_messages
from tests.factories import back_date, make_due_pings
from tests.scheduling.delivery.test_batches import make_once_rows
from tests.testapp.models import Ping, PingEffect, ScheduledOnce, ScheduledPing
from tests.testapp.tasks import handle_ping

pytestmark = pytest.mark.django_db(transaction=True)


def request_span(name="POST /api/pings/"):
    """What a traced web request would be: the span scheduling code runs inside."""
    return trace.get_tracer("tests").start_as_current_span(name, kind=SpanKind.SERVER)


def trace_id_of(span) -> int:
    return span.get_span_context().trace_id


def named(spans, prefix):
    return [span for span in spans.get_finished_spans() if span.name.startswith(prefix)]


def linked_traces(span) -> set[int]:
    return {link.context.trace_id for link in span.links}


def due_ping(name="p") -> ScheduledPing:
    row = ScheduledPing.objects.create(ping=Ping.objects.create(name=name), due_at=timezone.now())
    back_date(ScheduledPing, [row.pk])
    return row


def test_without_an_sdk_nothing_is_kept_and_messages_carry_no_trace_context(broker):
    make_due_pings(3)

    assert sweep(ScheduledPing).delivered == 3

    assert not CreationContext.objects.exists()
    assert all("traceparent" not in m["headers"] for m in queued_messages(broker, "testapp"))


def test_the_handler_span_links_to_the_request_that_scheduled_the_row(spans, broker):
    with request_span() as request:
        row = due_ping()
    [create] = named(spans, "create testapp")
    assert create.parent.span_id == request.get_span_context().span_id
    assert create.kind is SpanKind.PRODUCER

    assert sweep(ScheduledPing).delivered == 1
    [message] = queued_messages(broker, "testapp")
    # The message carries the row's creation context, where Celery's instrumentation looks.
    assert message["headers"]["traceparent"].split("-")[1] == f"{trace_id_of(request):032x}"
    [send] = named(spans, "send testapp")
    assert send.kind is SpanKind.PRODUCER
    assert linked_traces(send) == {trace_id_of(request)}
    assert send.attributes["messaging.batch.message_count"] == 1

    row.refresh_from_db()
    handle_ping(row.to_event("now"))

    [process] = named(spans, "process testapp")
    assert process.kind is SpanKind.CONSUMER
    assert linked_traces(process) == {trace_id_of(request)}
    assert process.context.trace_id != trace_id_of(request)  # linked, not a child
    assert process.attributes["scheduling.model"] == "testapp.scheduledping"
    assert process.attributes["scheduling.pk"] == str(row.pk)
    assert process.attributes["scheduling.attempt"] == 1
    assert process.attributes["scheduling.guarantee"] == "at_least_once"
    assert process.attributes["scheduling.lateness_seconds"] >= 0


def test_as_a_child_the_handler_span_continues_the_request_trace(spans, broker, settings):
    settings.SCHEDULING_TRACE_PARENT = "child"
    with request_span() as request:
        row = due_ping()
    sweep(ScheduledPing)

    handle_ping(ScheduledPing.objects.get(pk=row.pk).to_event("now"))

    [process] = named(spans, "process testapp")
    assert process.context.trace_id == trace_id_of(request)
    assert process.links == ()


def test_a_move_is_an_event_of_its_span_and_the_history_keeps_its_trace_id(spans):
    with request_span("create"):
        row = ScheduledPing.objects.create(
            ping=Ping.objects.create(name="p"), due_at=timezone.now() + timedelta(days=2)
        )
    created = CreationContext.objects.get(row_id=row.pk).traceparent

    with request_span("PATCH /api/trainings/1/") as move:
        ScheduledPing.objects.filter(pk=row.pk).reschedule(timezone.now() + timedelta(days=3))

    [patch] = named(spans, "PATCH")
    assert [event.name for event in patch.events] == ["scheduling.rescheduled"]
    entry = EventHistory.objects.get(row_id=row.pk, kind="rescheduled")
    assert entry.detail["trace_id"] == f"{trace_id_of(move):032x}"
    # The row keeps the context it was created in.
    assert CreationContext.objects.get(row_id=row.pk).traceparent == created


def test_every_try_of_a_failing_event_links_to_its_creation(spans, broker):
    with request_span() as request:
        row = due_ping("fail:5")  # fails its first five tries
    for _ in range(2):
        sweep(ScheduledPing)
        with pytest.raises(RuntimeError, match="planned failure"):
            handle_ping(ScheduledPing.objects.get(pk=row.pk).to_event("now"))
        ScheduledPing.objects.filter(pk=row.pk).update(due_at=timezone.now() - timedelta(seconds=1))

    tries = named(spans, "process testapp")
    assert [span.attributes["scheduling.attempt"] for span in tries] == [1, 2]
    assert all(linked_traces(span) == {trace_id_of(request)} for span in tries)
    assert all(span.status.status_code is StatusCode.ERROR for span in tries)
    assert all(span.events[-1].name == "exception" for span in tries)


def test_a_batch_message_carries_the_send_span_and_its_handling_links_every_event(
    spans, broker, monkeypatch
):
    monkeypatch.setattr(ScheduledPing, "handler_batch_size", 10)
    monkeypatch.setattr(ScheduledPing, "handler_task", "testapp.handle_ping_batch")
    with request_span() as first:
        make_due_pings(2, group="a")
    with request_span() as second:
        make_due_pings(1, group="b")

    assert sweep(ScheduledPing).delivered == 3
    [message] = queued_messages(broker, "testapp")
    [send] = named(spans, "send testapp")
    assert message["headers"]["traceparent"].split("-")[1] == f"{send.context.trace_id:032x}"
    assert linked_traces(send) == {trace_id_of(first), trace_id_of(second)}
    assert len(send.links) == 3


def test_an_at_most_once_handling_says_so_on_its_span(spans, broker):
    from tests.testapp.tasks import handle_once_ping

    with request_span() as request:
        make_once_rows(["once"])
    back_date(ScheduledOnce, list(ScheduledOnce.objects.values_list("pk", flat=True)))
    sweep(ScheduledOnce)

    handle_once_ping(ScheduledOnce.objects.get().to_event("now"))

    [process] = named(spans, "process")
    assert process.attributes["scheduling.guarantee"] == "at_most_once"
    assert linked_traces(process) == {trace_id_of(request)}
    assert PingEffect.objects.count() == 1


def traces_kept_for(model_label: str) -> set[str]:
    return {
        traceparent.split("-")[1]
        for traceparent in CreationContext.objects.filter(model=model_label).values_list(
            "traceparent", flat=True
        )
    }


def test_rows_a_rest_request_schedules_keep_its_trace(spans, api):
    from trainings.models import Player, Team

    team = Team.objects.create(name="Falcons")
    Player.objects.create(team=team, name="Ann", push_token="device-token-ann")
    start = timezone.now() + timedelta(days=10)
    body = {
        "team": team.pk,
        "start_at": start.isoformat(),
        "end_at": (start + timedelta(hours=2)).isoformat(),
        "invitations_enabled": True,
    }

    with request_span("POST /api/trainings/") as request:
        assert api.post("/api/trainings/", body, format="json").status_code == 201

    assert traces_kept_for("trainings.scheduledtrainingnotification") == {
        f"{trace_id_of(request):032x}"
    }


def test_a_keyed_jobs_runs_keep_the_trace_of_the_put(spans):
    from scheduling.jobs.services import job_put

    soon = timezone.now() + timedelta(hours=1)
    with request_span("PUT /api/jobs/nightly/") as request:
        job_put(
            key="nightly",
            schedules=[soon, soon + timedelta(days=1)],
            callback={"type": "queue", "queue": "reports"},
        )

    assert traces_kept_for("scheduling_jobs.scheduledjobrun") == {f"{trace_id_of(request):032x}"}
    assert CreationContext.objects.filter(model="scheduling_jobs.scheduledjobrun").count() == 2


def test_a_recurring_occurrence_links_to_its_schedules_last_create_or_edit(spans):
    from scheduling.recurring.models import RecurringSchedule

    with request_span("POST /api/schedules/") as created:
        schedule = RecurringSchedule.objects.create(
            name="nightly-report", cron="0 3 * * *", queue="reports"
        )
    occurrences = "scheduling_recurring.scheduledoccurrence"
    assert traces_kept_for(occurrences) == {f"{trace_id_of(created):032x}"}

    with request_span("PATCH /api/schedules/nightly-report/") as edited:
        schedule.cron = "0 4 * * *"
        schedule.save()

    pending = schedule.occurrences.get(status="pending")
    kept = CreationContext.objects.get(model=occurrences, row_id=pending.pk).traceparent
    assert kept.split("-")[1] == f"{trace_id_of(edited):032x}"


def test_a_purged_rows_creation_context_goes_with_it(spans):
    from scheduling.delivery.tasks import purge_task

    with request_span():
        row = due_ping()
    long_ago = timezone.now() - timedelta(days=8)
    ScheduledPing.objects.filter(pk=row.pk).update(
        status="delivered", delivered_at=long_ago, handled_at=long_ago
    )

    purge_task()

    assert not ScheduledPing.objects.filter(pk=row.pk).exists()
    assert not CreationContext.objects.filter(row_id=row.pk).exists()


def test_the_sweeps_batch_line_names_its_send_spans_trace(spans, caplog):
    with request_span():
        due_ping()

    with caplog.at_level("INFO", logger="scheduling.sweep"):
        sweep(ScheduledPing)

    [send] = named(spans, "send testapp")
    [line] = [r for r in caplog.records if r.getMessage().startswith("published")]
    assert line.trace_id == f"{send.context.trace_id:032x}"
    assert line.getMessage().endswith(f"trace_id {send.context.trace_id:032x}")


def test_the_admin_timeline_links_each_entry_to_its_trace(spans, admin_client, settings):
    settings.SCHEDULING_TRACE_URL = "https://traces.example/trace/{trace_id}"
    row = due_ping()
    with request_span("POST /admin/testapp/scheduledping/") as cancel:
        ScheduledPing.objects.filter(pk=row.pk).cancel("wrong ping")

    page = admin_client.get(f"/admin/testapp/scheduledping/{row.pk}/change/")

    trace_id = f"{trace_id_of(cancel):032x}"
    [line] = [line for line in page.context["timeline"] if line.kind == "cancelled"]
    assert line.trace_url == f"https://traces.example/trace/{trace_id}"
    assert f'href="https://traces.example/trace/{trace_id}"' in page.content.decode()


def test_a_trace_url_without_the_trace_id_is_refused_naming_the_setting(settings):
    from django.core.exceptions import ImproperlyConfigured

    from scheduling.rows.conf import scheduling_settings

    settings.SCHEDULING_TRACE_URL = "https://traces.example/trace/"
    with pytest.raises(ImproperlyConfigured, match=r"SCHEDULING_TRACE_URL=.*\{trace_id\}"):
        scheduling_settings()
    settings.SCHEDULING_TRACE_URL = ""
    settings.SCHEDULING_TRACE_PARENT = "parent"
    with pytest.raises(ImproperlyConfigured, match=r'SCHEDULING_TRACE_PARENT=.*"link"'):
        scheduling_settings()


@pytest.mark.django_db  # rolled back: the partitions it drops are other tests' too
def test_a_dropped_partitions_creation_contexts_go_with_it(spans):
    from scheduling.rows.clock import database_now
    from scheduling.rows.purge import purge_model
    from tests.scheduling.rows.test_partitions import rows_of
    from tests.testapp.models import ScheduledPingPartitioned

    old = database_now() - timedelta(days=60)
    with request_span():
        rows_of(ScheduledPingPartitioned, 3, due_at=old, status="cancelled")
    ScheduledPingPartitioned.objects.update(cancelled_at=old, updated_at=old)
    label = "testapp.scheduledpingpartitioned"
    assert CreationContext.objects.filter(model=label).count() == 3

    result = purge_model(ScheduledPingPartitioned, now=database_now() + timedelta(days=400))

    assert result.partitions >= 1
    assert not CreationContext.objects.filter(model=label).exists()


@pytest.mark.slow
def test_a_message_from_a_stock_celery_producer_is_handled(spans, celery_worker_process):
    """A host's own apply_async, with the traceparent its instrumentation would add: the real
    worker handles the event once, as the sweep's message."""
    from scheduling.delivery.sweep.sql import mark_delivered
    from tests.conftest import wait_for

    with request_span() as request:
        row = due_ping()
    mark_delivered(ScheduledPing, [row])  # as a sweep would have left it
    row.refresh_from_db()
    traceparent = f"00-{trace_id_of(request):032x}-{request.get_span_context().span_id:016x}-01"

    handle_ping.apply_async(
        kwargs={"event": row.to_event("now")}, queue="testapp", headers={"traceparent": traceparent}
    )

    wait_for(lambda: ScheduledPing.objects.filter(pk=row.pk).handled().exists())
    assert PingEffect.objects.filter(ping_id=row.ping_id).count() == 1


def test_a_sale_inserted_in_sql_keeps_the_trace_of_its_request(spans):
    from purchases.models import ScheduledPurchase
    from purchases.services import purchase_create
    from tests.purchases.factories import CustomerFactory, ReleaseFactory, TrackFactory

    release = ReleaseFactory(release_date=timezone.now() + timedelta(days=30))
    TrackFactory(release=release, release_date=timezone.now() + timedelta(days=10))
    with request_span("POST /api/purchases/") as request:
        purchase = purchase_create(customer=CustomerFactory(), release=release)

    rows = ScheduledPurchase.objects.filter(purchase=purchase).values_list("pk", flat=True)
    kept = CreationContext.objects.filter(model="purchases.scheduledpurchase", row_id__in=rows)
    assert len(rows) == 2
    assert {c.traceparent.split("-")[1] for c in kept} == {f"{trace_id_of(request):032x}"}
    assert kept.count() == 2


def test_a_django_task_enqueued_in_a_request_keeps_its_trace(spans):
    from scheduling.jobs.models import ScheduledJobRun
    from tests.testapp import taskfuncs

    with request_span("POST /signup/") as request:
        taskfuncs.add.enqueue(2, 3)

    [run] = ScheduledJobRun.objects.all()
    kept = CreationContext.objects.get(model="scheduling_jobs.scheduledjobrun", row_id=run.pk)
    assert kept.traceparent.split("-")[1] == f"{trace_id_of(request):032x}"
