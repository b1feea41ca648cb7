"""A callback reaches only what may take it (issue #26, findings 6 and 7): a task callback
names no scheduled model's handler (that handler refuses any other model's event, so every
delivery would fail) and uses no queue of the framework's own; queue names compare in any
case, so `Purchases` is refused as `purchases` is. Keyed jobs and recurring schedules alike."""

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from scheduling.jobs.models import Job
from scheduling.recurring.models import RecurringSchedule
from tests.conftest import client_for, users_of
from tests.scheduling.jobs.conftest import put_job

pytestmark = pytest.mark.django_db

HANDLERS = [
    "purchases.send_fulfillment_email",
    "trainings.send_training_reminder",
    "testapp.handle_ping",
]
# The framework's queue and the scheduled models' queues, in the case a client might send.
MODEL_QUEUES = ["purchases", "Purchases", "TRAININGS", "Scheduling", "testapp"]
SCHEDULES = "/api/schedules/"


@pytest.fixture
def schedules_api() -> APIClient:
    actions = ("view", "add", "change", "delete")
    user = users_of("scheduling_recurring")("planner", *(f"{a}_recurringschedule" for a in actions))
    return client_for(user)


def refusal(response: Any, field: str = "callback") -> str:
    assert response.status_code == 400, response.content
    (message,) = response.json()[field]
    return str(message)


@pytest.mark.parametrize("handler", HANDLERS)
@pytest.mark.parametrize("queue", [None, "purchases", "trainings", "billing"])
def test_a_task_callback_naming_a_models_handler_is_refused(api, handler, queue, settings):
    settings.SCHEDULING_EXTERNAL_TASKS = ["billing.*"]
    callback = {"type": "task", "task": handler, **({"queue": queue} if queue else {})}

    message = refusal(put_job(api, "k", callback=callback))

    assert message.startswith(f"task: {handler!r} handles ")
    assert "events only" in message
    assert not Job.objects.exists()


@pytest.mark.parametrize("queue", MODEL_QUEUES)
def test_an_outside_task_on_a_framework_queue_is_refused(api, queue, settings):
    settings.SCHEDULING_EXTERNAL_TASKS = ["billing.*"]
    callback = {"type": "task", "task": "billing.charge", "queue": queue}

    message = refusal(put_job(api, "k", callback=callback))

    assert message.startswith(f"queue: {queue!r} is the queue of ")


def test_an_outside_task_on_its_own_queue_and_a_plain_task_of_ours_are_accepted(api, settings):
    settings.SCHEDULING_EXTERNAL_TASKS = ["billing.*"]
    billing = {"type": "task", "task": "billing.charge", "queue": "billing"}

    assert put_job(api, "a", callback=billing).status_code == 201
    ours = {"type": "task", "task": "testapp.note_job_run"}
    assert put_job(api, "b", callback=ours).status_code == 201


@pytest.mark.parametrize("queue", [*MODEL_QUEUES, "CELERY", "Celeryev.x", "UNACKED", "Amq.x"])
def test_a_json_queue_is_compared_in_any_case(api, queue):
    queue_message = refusal(put_job(api, "k", callback={"type": "queue", "queue": queue}))
    rabbitmq = {"type": "rabbitmq", "data": {"queue": queue}}
    rabbitmq_message = refusal(put_job(api, "k", callback=rabbitmq))

    assert queue_message.startswith("queue: ")
    assert rabbitmq_message.startswith("data.queue: ")
    assert not Job.objects.exists()


def test_an_unreserved_queue_of_any_case_is_accepted(api):
    assert put_job(api, "k", callback={"type": "queue", "queue": "Reminders"}).status_code == 201


def test_a_schedule_naming_a_handler_is_refused_naming_task(schedules_api):
    body = {"name": "nightly", "cron": "0 3 * * *", "task": "purchases.send_fulfillment_email"}

    message = refusal(schedules_api.post(SCHEDULES, body, format="json"), field="task")

    assert "handles purchases.ScheduledPurchase events only" in message
    assert not RecurringSchedule.objects.exists()


@pytest.mark.parametrize("queue", ["Purchases", "TRAININGS", "Celery"])
def test_a_schedule_queue_is_compared_in_any_case_naming_queue(schedules_api, queue):
    body = {"name": "nightly", "cron": "0 3 * * *", "queue": queue}

    refusal(schedules_api.post(SCHEDULES, body, format="json"), field="queue")

    assert not RecurringSchedule.objects.exists()


@pytest.fixture
def api_user(db: None) -> User:
    return users_of("scheduling_jobs")("operator", "view_job", "add_job", "change_job")
