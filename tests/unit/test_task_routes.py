"""A sweep's batch asks Celery's router once a task name, and every batch asks it again."""

import pytest
from celery import current_app

from scheduling.delivery.publishing.targets import routes_remembered, task_queue


@pytest.fixture
def routings(monkeypatch):
    """The task names Celery's router was asked for, in order; it routes `billing.*` to the
    `billing` queue."""
    asked: list[str] = []

    def route(options, name, *args, **kwargs):
        asked.append(name)
        return {"queue": "billing"} if name.startswith("billing.") else {}

    monkeypatch.setattr(current_app.amqp.router, "route", route)
    return asked


def test_within_a_batch_each_task_name_is_routed_once(routings):
    with routes_remembered():
        queues = [task_queue(name) for name in ["billing.charge", "mail.send"] * 3]

    assert queues == ["billing", current_app.conf.task_default_queue] * 3
    assert routings == ["billing.charge", "mail.send"]


def test_each_batch_and_every_call_outside_one_asks_the_router_again(routings):
    for _ in range(2):
        with routes_remembered():
            task_queue("billing.charge")
    task_queue("billing.charge")
    task_queue("billing.charge")

    assert routings == ["billing.charge"] * 4
