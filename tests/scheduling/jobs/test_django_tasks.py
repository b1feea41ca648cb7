"""SchedulingBackend: django.tasks' enqueue() stored as a keyed job, run through handle_once by
the sweep and a worker (here scheduling.delivery.testing.run_due: the real sweep and handler task, in
process), get_result() read from the rows; and a scheduled model's handler_task as a @task."""

from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from celery import Celery
from django.core.checks import Error
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from scheduling.delivery.celery import consume_scheduling_queues
from scheduling.delivery.checks import check_handler_tasks
from scheduling.delivery.testing import run_due
from scheduling.jobs.backends import SchedulingBackend
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.jobs.services import JobError
from scheduling.rows import djangotasks
from scheduling.rows.djangotasks import RUN_TASK, backend_queues
from tests.factories import factory_for
from tests.testapp import taskfuncs
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db

SECOND = timedelta(seconds=1)


def run_tasks(at: Any = None) -> int:
    return run_due(ScheduledJobRun, now=at or timezone.now())


def test_an_enqueued_task_is_a_keyed_job_with_one_pending_run() -> None:
    result = taskfuncs.add.enqueue(2, 3)

    job = Job.objects.get()
    run = job.runs.get()
    assert job.key == f"task:{result.id}"
    assert job.callback == {"type": "task", "task": RUN_TASK, "queue": "celery"}  # the default
    assert job.payload == {"args": [2, 3], "kwargs": {}}
    assert job.labels == {
        "task": "tests.testapp.taskfuncs.add",
        "queue_name": "default",
        "backend": "default",
    }
    assert (run.status, result.status) == ("pending", djangotasks.TaskResultStatus.READY)
    assert result.enqueued_at == run.created_at


def test_it_runs_after_run_after_and_reads_successful_with_the_return_value() -> None:
    now = timezone.now()
    result = taskfuncs.add.using(run_after=now + 3 * SECOND).enqueue(2, b=3)

    assert run_tasks(now) == 0
    assert taskfuncs.add.get_result(result.id).status == "READY"
    assert run_tasks(now + 4 * SECOND) == 1
    assert run_tasks(now + 5 * SECOND) == 0

    done = taskfuncs.add.get_result(result.id)
    assert (done.status, done.return_value, done.attempts) == ("SUCCESSFUL", 5, 1)
    assert done.started_at is not None
    assert done.finished_at >= done.started_at
    assert (done.args, done.kwargs, done.errors) == ([2], {"b": 3}, [])


def test_an_enqueue_in_a_rolled_back_transaction_leaves_nothing() -> None:
    def request() -> None:
        with transaction.atomic():
            taskfuncs.add.enqueue(1, 1)
            raise RuntimeError("the view failed")

    with pytest.raises(RuntimeError):
        request()

    assert not Job.objects.exists()
    assert run_tasks() == 0


@override_settings(SCHEDULING_MAX_ATTEMPTS=2, SCHEDULING_RETRY_BACKOFF=1)
def test_a_failing_task_is_retried_with_backoff_then_failed_with_its_errors() -> None:
    result = taskfuncs.fail.enqueue("no mail server")
    now = timezone.now()

    run_tasks(now)
    run = ScheduledJobRun.objects.get()
    assert (run.status, run.attempts) == ("pending", 1)
    assert run.due_at > now  # the jobs' backoff
    assert run.last_error == "RuntimeError: no mail server"
    assert taskfuncs.fail.get_result(result.id).status == "READY"

    run_tasks(now + 10 * SECOND)

    failed = taskfuncs.fail.get_result(result.id)
    assert (failed.status, failed.attempts) == ("FAILED", 2)
    assert [e.exception_class for e in failed.errors] == [RuntimeError, RuntimeError]
    assert "no mail server" in failed.errors[-1].traceback
    assert failed.finished_at is not None
    with pytest.raises(ValueError, match="failed"):
        failed.return_value  # noqa: B018


def test_async_functions_run() -> None:
    result = taskfuncs.double.enqueue(21)

    assert run_tasks() == 1
    assert taskfuncs.double.get_result(result.id).return_value == 42


def test_a_task_taking_context_sees_its_attempt() -> None:
    result = taskfuncs.which_attempt.enqueue()

    run_tasks()

    assert taskfuncs.which_attempt.get_result(result.id).return_value == 1


def test_the_return_value_is_stored_as_json() -> None:
    result = taskfuncs.as_tuple.enqueue()

    run_tasks()

    assert taskfuncs.as_tuple.get_result(result.id).return_value == [1, 2]


def test_a_return_value_over_the_bound_fails_the_task_naming_it() -> None:
    result = taskfuncs.too_much.enqueue()

    run_tasks()

    run = ScheduledJobRun.objects.get()
    assert "return value" in run.last_error
    assert "65536" in run.last_error
    assert taskfuncs.too_much.get_result(result.id).errors


def test_queue_name_is_the_celery_queue_of_the_run() -> None:
    taskfuncs.send_email.enqueue("a@example.com")

    assert Job.objects.get().callback["queue"] == "emails"


def test_a_priority_is_refused_with_what_to_do_instead() -> None:
    with pytest.raises(djangotasks.InvalidTask, match=r"priority: .*no priorities; got 5"):
        taskfuncs.add.using(priority=5)


def test_a_queue_no_broker_may_take_is_refused_at_start() -> None:
    with pytest.raises(djangotasks.InvalidTask, match=r"queue_name: .*reserved"):
        SchedulingBackend("other", {"QUEUES": ["default", "amq.jobs"]})


def test_arguments_that_are_not_json_are_refused() -> None:
    with pytest.raises(TypeError):
        taskfuncs.add.enqueue(object(), 1)


@override_settings(SCHEDULING_JOB_MAX_PAYLOAD_BYTES=100)
def test_arguments_over_the_payload_bound_are_refused_naming_the_field() -> None:
    with pytest.raises(JobError, match=r"at most 100 bytes.*args and kwargs") as refused:
        taskfuncs.add.enqueue("x" * 200, 1)

    assert refused.value.field == "args"


def test_an_unknown_result_id_does_not_exist() -> None:
    with pytest.raises(djangotasks.TaskResultDoesNotExist):
        taskfuncs.add.get_result("nope")


def test_the_flags_say_what_the_backend_does() -> None:
    backend = SchedulingBackend("x", {})

    assert (backend.supports_defer, backend.supports_async_task) == (True, True)
    assert (backend.supports_get_result, backend.supports_priority) == (True, False)


def test_aenqueue_and_aget_result_answer_from_the_row() -> None:
    async def enqueue_then_read() -> Any:
        result = await taskfuncs.add.aenqueue(1, 2)
        return await taskfuncs.add.aget_result(result.id)

    assert async_to_sync(enqueue_then_read)().status == "READY"


# --- a scheduled model's handler_task as a @task -----------------------------------------


@pytest.fixture
def ping_handled_by_a_task(monkeypatch: pytest.MonkeyPatch) -> type[ScheduledPing]:
    monkeypatch.setattr(ScheduledPing, "handler_task", "tests.testapp.taskfuncs.handle_ping")
    taskfuncs.handled_events.clear()
    return ScheduledPing


def test_a_task_handler_runs_through_handle_once(ping_handled_by_a_task: Any) -> None:
    row: Any = factory_for(ScheduledPing)(due_at=timezone.now())

    assert run_due(ping_handled_by_a_task) == 1

    row.refresh_from_db()
    assert row.handled_at is not None
    assert taskfuncs.handled_events == [row.event_id]


def test_a_task_handler_object_is_accepted_too(ping_handled_by_a_task: Any) -> None:
    ping_handled_by_a_task.handler_task = taskfuncs.handle_ping
    factory_for(ScheduledPing)(due_at=timezone.now())

    assert run_due(ping_handled_by_a_task) == 1


def test_a_failing_task_handler_is_recorded_on_the_row(ping_handled_by_a_task: Any) -> None:
    ping_handled_by_a_task.handler_task = "tests.testapp.taskfuncs.fail_ping"
    row: Any = factory_for(ScheduledPing)(due_at=timezone.now())

    assert run_due(ping_handled_by_a_task) == 0

    row.refresh_from_db()
    assert (row.status, row.attempts) == ("pending", 1)
    assert row.last_error.startswith("RuntimeError: cannot handle")


def test_the_handler_check_accepts_a_task(ping_handled_by_a_task: Any) -> None:
    errors = [e for e in check_handler_tasks() if isinstance(e, Error) and e.obj is ScheduledPing]

    assert errors == []


def test_the_handler_check_still_refuses_an_unknown_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ScheduledPing, "handler_task", "tests.testapp.taskfuncs.nothing_here")

    errors = [e for e in check_handler_tasks() if e.obj is ScheduledPing]

    assert [e.id for e in errors] == ["scheduling.E004"]


# --- the admin ---------------------------------------------------------------------------


def test_the_admin_lists_enqueued_tasks_filterable_by_task_name(admin_client: Any) -> None:
    added = taskfuncs.add.enqueue(1, 2)
    doubled = taskfuncs.double.enqueue(2)
    runs, jobs = "/admin/scheduling_jobs/scheduledjobrun/", "/admin/scheduling_jobs/job/"

    page = admin_client.get(runs).content.decode()
    only_add = admin_client.get(runs, {"task": "tests.testapp.taskfuncs.add"}).content.decode()
    jobs_page = admin_client.get(jobs, {"task": "tests.testapp.taskfuncs.double"})

    assert "tests.testapp.taskfuncs.double" in page  # a choice of the filter
    assert f"task:{added.id}" in only_add
    assert f"task:{doubled.id}" not in only_add
    assert list(jobs_page.context["cl"].result_list) == [Job.objects.get(key=f"task:{doubled.id}")]


def test_a_stock_worker_consumes_the_backends_queues() -> None:
    app = Celery("host", set_as_current=False)

    consume_scheduling_queues(sender="worker", instance=SimpleNamespace(app=app), conf=app.conf)

    assert "emails" in app.amqp.queues.consume_from
    assert backend_queues() == {"emails"}  # "default" is Celery's default queue


def test_the_task_signals_are_sent_for_each_attempt() -> None:
    signals = {
        name: getattr(djangotasks, f"task_{name}") for name in ("enqueued", "started", "finished")
    }
    seen: list[tuple[str, str]] = []

    def receiver(signal: Any, task_result: Any, **kwargs: Any) -> None:
        name = next(name for name, each in signals.items() if each is signal)
        seen.append((name, str(task_result.status)))

    for signal in signals.values():
        signal.connect(receiver, weak=False, dispatch_uid="test-task-signals")
    try:
        taskfuncs.add.enqueue(1, 2)
        taskfuncs.fail.enqueue("down")
        run_tasks()
    finally:
        for signal in signals.values():
            signal.disconnect(dispatch_uid="test-task-signals")

    assert seen == [
        ("enqueued", "READY"),
        ("enqueued", "READY"),
        ("started", "RUNNING"),
        ("finished", "SUCCESSFUL"),
        ("started", "RUNNING"),
        ("finished", "FAILED"),
    ]


# --- the keyed jobs' REST API -------------------------------------------------------------


def test_the_jobs_api_lists_and_cancels_tasks_by_name(api: Any) -> None:
    added = taskfuncs.add.enqueue(1, 2)
    doubled = taskfuncs.double.enqueue(2)
    by_name = {"label.task": "tests.testapp.taskfuncs.add"}

    listed = api.get("/api/jobs/", by_name).json()
    cancelled = api.post("/api/jobs/cancel/", {"filter": by_name}, format="json").json()

    assert [each["key"] for each in listed["results"]] == [f"task:{added.id}"]
    assert cancelled == {"count": 1}
    assert taskfuncs.add.get_result(added.id).status == "FAILED"
    assert taskfuncs.double.get_result(doubled.id).status == "READY"
    assert run_tasks() == 1  # the doubling alone
