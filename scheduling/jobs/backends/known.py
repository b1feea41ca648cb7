"""The django.tasks functions the code defines on SchedulingBackend, by their path.

A stored task name (a job's `task` label) is looked up here and nowhere else: nothing a row
holds is ever imported. Each @task on SchedulingBackend registers itself as it is defined
(django.tasks validates every Task with its backend), so a process knows the tasks of the
modules it has imported. A worker imports each installed app's `tasks` module and the modules
of Celery's `imports` and `include` settings as it starts; a name not known yet makes this
process import those same modules once (names the code gives, never a row), then look again.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from celery import current_app
from django.conf import settings

from scheduling.rows.djangotasks import BACKEND_PATH

UNKNOWN_TASK = (
    "task {name!r}: no @task of that path is defined on SchedulingBackend in this process, so "
    "nothing was run. A stored task name is never imported: a worker knows the @task "
    "functions of each installed app's tasks module and of the modules in CELERY_IMPORTS "
    "(and what they import). A task enqueued by newer code runs once this worker has it."
)
NOT_OURS = (
    "backend {alias!r}: not a SchedulingBackend alias of TASKS, so nothing was run; a task "
    "stored by SchedulingBackend runs on the backend it was enqueued with."
)

_defined: dict[str, Any] = {}


class UnknownTask(LookupError):
    """A stored task name that names no @task the code defines; nothing was run."""


def remember(task: Any) -> None:
    """Called by SchedulingBackend.validate_task for every Task defined (or .using()) on it."""
    _defined.setdefault(task.module_path, task)


def defined_task(name: str) -> Any:
    """The @task the code defines at `name`; UnknownTask if there is none."""
    if name not in _defined:
        _import_task_modules()
    if name not in _defined:
        raise UnknownTask(UNKNOWN_TASK.format(name=str(name)[:200]))
    return _defined[name]


def check_our_backend(alias: str) -> str:
    """A stored backend alias must be one of TASKS' SchedulingBackend entries."""
    backends = getattr(settings, "TASKS", {})
    if not isinstance(alias, str) or backends.get(alias, {}).get("BACKEND") != BACKEND_PATH:
        raise UnknownTask(NOT_OURS.format(alias=str(alias)[:200]))
    return alias


@cache
def _import_task_modules() -> None:
    # What a worker imports as it starts (Celery's loader), without the Django fixup's system
    # checks that the loader's import_default_modules() would run here.
    current_app.autodiscover_tasks(force=True)
    for module in current_app.loader.default_modules:
        current_app.loader.import_task_module(module)
