"""Django's task framework wherever this Django has it: `django.tasks` (Django 6), else the
`django_tasks` backport (Django 5.2, the `tasks` extra). With neither, AVAILABLE is False,
no value is a task, and SchedulingBackend refuses to start with a message saying what to install.

The names below are the framework's own classes; they are looked up by module name because one
of the two modules is always missing, and the type checker sees only one Django at a time.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from types import ModuleType
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

# The Celery tasks that run django.tasks functions: an enqueued one (scheduling.jobs.tasks) and
# a scheduled model's handler_task given as a @task (scheduling.delivery.tasks).
RUN_TASK = "scheduling.run_task"
RUN_HANDLER = "scheduling.run_handler"
BACKEND_PATH = "scheduling.jobs.backends.SchedulingBackend"
DEFAULT_QUEUE_NAME = "default"  # django.tasks' DEFAULT_TASK_QUEUE_NAME: Celery's default queue

MISSING = (
    "django.tasks is not available: it comes with Django 6; on Django 5.2 install the backport "
    "(pip install 'django-scheduling[tasks]', which brings django-tasks)."
)


def _framework() -> dict[str, ModuleType] | None:
    for package in ("django.tasks", "django_tasks"):
        try:
            parts = ("", ".base", ".exceptions", ".signals", ".backends.base")
            return {part: import_module(package + part) for part in parts}
        except ImportError:
            continue
    return None


class _Unavailable:
    """Stands for the framework's classes where it is missing: nothing is an instance of it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ImproperlyConfigured(MISSING)


_found = _framework()
AVAILABLE = _found is not None
MODULE: str = _found[""].__name__ if _found is not None else ""

task: Any = _Unavailable  # the @task decorator (where missing, @task says what to install)
Task: Any = _Unavailable
TaskResult: Any = _Unavailable
TaskResultStatus: Any = None
TaskError: Any = _Unavailable
TaskContext: Any = _Unavailable
BaseTaskBackend: Any = _Unavailable
InvalidTask: Any = ImproperlyConfigured
TaskResultDoesNotExist: Any = LookupError
task_enqueued: Any = None
task_started: Any = None
task_finished: Any = None

if _found is not None:
    task, Task, TaskResult = _found[""].task, _found[".base"].Task, _found[".base"].TaskResult
    TaskResultStatus, TaskError = _found[".base"].TaskResultStatus, _found[".base"].TaskError
    TaskContext = _found[".base"].TaskContext
    BaseTaskBackend = _found[".backends.base"].BaseTaskBackend
    exceptions = _found[".exceptions"]
    # Django 6 names it InvalidTask; the backport, InvalidTaskError.
    InvalidTask = getattr(exceptions, "InvalidTask", None) or exceptions.InvalidTaskError
    TaskResultDoesNotExist = exceptions.TaskResultDoesNotExist
    signals = _found[".signals"]
    task_enqueued, task_started, task_finished = (
        signals.task_enqueued,
        signals.task_started,
        signals.task_finished,
    )


def as_task(value: object) -> Any | None:
    """The django.tasks Task that `value` is or names by dotted path; None for anything else
    (a Celery task name, which is not an importable path to a Task)."""
    if not AVAILABLE:
        return None
    found = _imported(value) if isinstance(value, str) else value
    return found if isinstance(found, Task) else None


@cache
def _imported(path: str) -> object:
    try:
        return import_string(path)
    except ImportError:
        return None


def backend_queues() -> set[str]:
    """The Celery queues SchedulingBackend's tasks may go to besides Celery's default one: the
    QUEUES of each TASKS entry on it (a worker consumes them as it does the models' queues)."""
    backends = getattr(settings, "TASKS", {}).values()
    ours = [
        params.get("QUEUES", ()) for params in backends if params.get("BACKEND") == BACKEND_PATH
    ]
    return {name for queues in ours for name in queues} - {DEFAULT_QUEUE_NAME}
