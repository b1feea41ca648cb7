"""Where a scheduled row may publish: the rules a callback target (a Celery task, or a queue
for plain JSON) must follow, shared by keyed jobs and recurring schedules."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from fnmatch import fnmatchcase
from functools import cache
from typing import Any

from celery import current_app
from django.db import models

from scheduling.rows.conf import scheduling_settings

QUEUE_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}")
TASK_PATTERN = re.compile(r"(?=.{1,200}$)[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
# Prefixes no queue of either callback type may take: the framework's own Redis keys
# ("scheduling:"), kombu's next to the queues in the broker database ("_kombu", "unacked"),
# where a list pushed onto one would fail the sweep's whole batch, and "amq.", which RabbitMQ
# refuses to declare.
RESERVED_QUEUE_PREFIXES = ("scheduling:", "_kombu", "unacked", "amq.")
# Celery's own tasks and the framework's: no callback may name them.
INTERNAL_TASK_PREFIXES = ("celery.", "scheduling.")
# Celery's control and event queues start "celery": only Celery's own queues may.
CELERY_PREFIX = "celery"
QUEUE_FORM = "1 to 200 letters, digits and . _ : - (starting with a letter or digit)"
TASK_FORM = "a dotted Celery task name, e.g. billing.tasks.charge"
RESERVED_FORM = (
    f"names starting with {', '.join(RESERVED_QUEUE_PREFIXES)} are reserved, and names "
    f"starting with {CELERY_PREFIX} but for a task's own Celery queue (in any case)"
)
# Queue names are compared case-insensitively: brokers tell `purchases` from `Purchases`, but a
# person reading a queue list or a callback does not, and no client needs both.


class TargetError(ValueError):
    """A value a caller sent is not acceptable; `field` names it, the message the accepted form."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class CallbackType(models.TextChoices):
    QUEUE = "queue", "Plain JSON on a named queue"
    TASK = "task", "Celery task"
    RABBITMQ = "rabbitmq", "The payload alone, as JSON on a named queue"


CALLBACK_FORMS = (
    '{"type": "queue", "queue": "<name>"}, {"type": "task", "task": "<name>"} or '
    '{"type": "rabbitmq", "data": {"queue": "<name>", "payload": {…}}}'
)
RABBITMQ_DATA_FORM = '{"queue": "<name>", "payload": {…}} (payload optional)'


def check_callback(callback: object, *, known_task: bool = False) -> dict[str, Any]:
    """The callback in its stored form: a task's queue is resolved by Celery's routes.

    With `known_task`, a task callback must name a task registered in the Celery app or one
    SCHEDULING_EXTERNAL_TASKS declares. A rabbitmq callback keeps `data.payload` if given:
    its owner (a keyed job) takes it out.
    """
    if not isinstance(callback, dict) or callback.get("type") not in CallbackType.values:
        raise TargetError(
            "callback", f"Enter {CALLBACK_FORMS}; unknown callback {_short(callback)}."
        )
    if callback["type"] == CallbackType.QUEUE:
        _only_keys(callback, {"type", "queue"})
        return {"type": CallbackType.QUEUE, "queue": check_json_queue(callback.get("queue"))}
    if callback["type"] == CallbackType.RABBITMQ:
        return check_rabbitmq_callback(callback)
    return check_task_callback(callback, known_task=known_task)


def check_task_callback(callback: dict[str, Any], *, known_task: bool) -> dict[str, Any]:
    _only_keys(callback, {"type", "task", "queue"})
    task = callback.get("task")
    if not isinstance(task, str) or not TASK_PATTERN.fullmatch(task):
        raise TargetError("callback", f"task: enter {TASK_FORM}; got {_short(task)}.")
    if task.startswith(INTERNAL_TASK_PREFIXES):
        raise TargetError("callback", f"task: {task!r} is internal; enter one of your own tasks.")
    check_not_a_handler(task)
    if known_task:
        check_known_task(task)
    queue = check_queue_name(callback.get("queue") or task_queue(task))
    if _folded(queue).startswith(CELERY_PREFIX) and _folded(queue) not in _folded_set(
        celery_queues()
    ):
        raise TargetError("callback", f"queue: {RESERVED_FORM}; got {queue!r}.")
    check_not_a_model_queue(queue)
    return {"type": CallbackType.TASK, "task": task, "queue": queue}


def check_not_a_handler(task: str) -> None:
    """A scheduled model's handler takes that model's events only (handle_once refuses any
    other): the events of a job's or a schedule's callback would fail on every delivery. Its
    handler_task, and any task built on EventHandlerTask (a single-event handler kept beside
    a batched one, say)."""
    model = handler_models().get(task) or (
        "a scheduled model's" if is_event_handler_task(task) else None
    )
    if model is not None:
        raise TargetError(
            "callback",
            f"task: {task!r} handles {model} events only, and a callback sends its own; enter "
            "a task of your own (registered, or declared in SCHEDULING_EXTERNAL_TASKS).",
        )


def is_event_handler_task(task: str) -> bool:
    """A task of this project's Celery app built on EventHandlerTask (scheduling.delivery.tasks)."""
    _discover_tasks()
    return bool(getattr(current_app.tasks.get(task), "handles_scheduled_events", False))


def check_not_a_model_queue(queue: str) -> None:
    """The framework's queue and each scheduled model's carry their own tasks: their workers
    run the sweep and the handlers, and would fail or drop another task."""
    owner = model_queues().get(_folded(queue))
    if owner is not None:
        raise TargetError(
            "callback",
            f"queue: {queue!r} is the queue of {owner}, for its tasks only; enter the queue "
            "your task's workers consume (or none: the task's own route).",
        )


def handler_models() -> dict[str, str]:
    """Each scheduled model's handler task, with the model's label."""
    from scheduling.rows.registry import (
        scheduled_models,  # the registry needs the app registry ready
    )

    return {m.get_handler_task(): m._meta.label for m in scheduled_models() if m.handler_task}


def model_queues() -> dict[str, str]:
    """The queues the framework publishes its own tasks to (case-folded), with their owner."""
    from scheduling.rows.registry import scheduled_models

    owners = {_folded(m.get_queue()): m._meta.label for m in scheduled_models()}
    return {**owners, _folded(scheduling_settings().queue): "the scheduling framework (sweeps)"}


def check_rabbitmq_callback(callback: dict[str, Any]) -> dict[str, Any]:
    """MyCoach's form: the payload alone is the message body, on the queue `data.queue`."""
    _only_keys(callback, {"type", "data"})
    data = callback.get("data")
    if not isinstance(data, dict):
        raise TargetError("callback", f"data: enter {RABBITMQ_DATA_FORM}; got {_short(data)}.")
    _only_keys(data, {"queue", "payload"}, where="data.")
    checked = {"queue": check_json_queue(data.get("queue"), where="data.queue")}
    if "payload" in data:
        checked["payload"] = data["payload"]
    return {"type": CallbackType.RABBITMQ, "data": checked}


def check_known_task(task: str) -> str:
    """A task this project's workers run, or one declared external (another codebase's)."""
    registered = registered_tasks()
    if task in registered or is_external_task(task):
        return task
    close = difflib.get_close_matches(task, registered, n=3)
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    raise TargetError(
        "callback",
        f"task: {task!r} is not a task of this project's Celery app.{hint} Enter a registered "
        "task, or declare tasks that other codebases' workers run in SCHEDULING_EXTERNAL_TASKS "
        "(names or patterns, e.g. billing.*).",
    )


def registered_tasks() -> list[str]:
    """The tasks a callback may name: this project's, but Celery's, the framework's and the
    scheduled models' handlers."""
    _discover_tasks()
    handlers = handler_models()
    return sorted(
        name
        for name in current_app.tasks
        if not name.startswith(INTERNAL_TASK_PREFIXES)
        and name not in handlers
        and not is_event_handler_task(name)
    )


@cache
def _discover_tasks() -> None:
    # A worker imports every installed app's tasks module as it starts; a web process does
    # not, so until this runs its Celery app knows only the tasks imported so far.
    current_app.autodiscover_tasks(force=True)


def is_external_task(task: str) -> bool:
    return any(fnmatchcase(task, pattern) for pattern in scheduling_settings().external_tasks)


def check_json_queue(queue: object, where: str = "queue") -> str:
    """A queue for plain JSON must not be one that Celery workers or kombu read."""
    name = check_queue_name(queue, where)
    if _folded(name).startswith(CELERY_PREFIX):
        raise TargetError("callback", f"{where}: {RESERVED_FORM}; got {name!r}.")
    if _folded(name) in _folded_set(celery_queues()):
        raise TargetError(
            "callback",
            f"{where}: {name!r} carries Celery task messages (names compare in any case); "
            "choose another name.",
        )
    return name


def check_queue_name(queue: object, where: str = "queue") -> str:
    """A well-formed name that is none of the broker's or the framework's own keys."""
    if not isinstance(queue, str) or not QUEUE_PATTERN.fullmatch(queue):
        raise TargetError("callback", f"{where}: enter {QUEUE_FORM}; got {_short(queue)}.")
    if _folded(queue).startswith(RESERVED_QUEUE_PREFIXES):
        raise TargetError("callback", f"{where}: {RESERVED_FORM}; got {queue!r}.")
    return queue


def celery_queues() -> set[str]:
    from scheduling.rows.registry import queue_names  # the registry needs the app registry ready

    conf = current_app.conf
    routes = conf.task_routes if isinstance(conf.task_routes, dict) else {}
    routed = {route["queue"] for route in routes.values() if isinstance(route, dict)}
    return {*queue_names(), conf.task_default_queue, *routed} - {None}


# Within routes_remembered(): each task name's queue, routed once.
_remembered: ContextVar[dict[str, str] | None] = ContextVar("remembered_routes", default=None)


@contextmanager
def routes_remembered() -> Iterator[None]:
    """Within it, task_queue() asks Celery's router once a task name (a sweep's batch: a
    thousand rows of one task cost a thousand routings, a quarter of the batch's CPU). The
    routes are asked again by the next batch, so a router function's change still lands."""
    token = _remembered.set({})
    try:
        yield
    finally:
        _remembered.reset(token)


def task_queue(task_name: str) -> str:
    """The queue Celery's routes give the task, else the default queue."""
    remembered = _remembered.get()
    if remembered is not None and task_name in remembered:
        return remembered[task_name]
    route = current_app.amqp.router.route({}, task_name)
    queue = route.get("queue")
    name = str(getattr(queue, "name", queue) or current_app.conf.task_default_queue)
    if remembered is not None:
        remembered[task_name] = name
    return name


def _only_keys(callback: dict[str, Any], accepted: set[str], where: str = "") -> None:
    unknown = sorted(set(callback) - accepted)
    if unknown:
        names = ", ".join(where + name for name in sorted(accepted))
        wrong = ", ".join(where + str(name) for name in unknown)
        raise TargetError("callback", f"Unknown {wrong}; accepted: {names}.")


def _folded(name: str) -> str:
    return name.casefold()


def _folded_set(names: set[str]) -> set[str]:
    return {_folded(name) for name in names}


def _short(value: object) -> str:
    return repr(value)[:100]
