"""A django.tasks backend whose tasks are keyed jobs: `TASKS = {"default": {"BACKEND":
"scheduling.jobs.backends.SchedulingBackend"}}`, with `scheduling.jobs` installed (docs/django-tasks.md).

`task` is django.tasks' decorator wherever this Django has it (`django.tasks` on Django 6, the
`django_tasks` backport on 5.2), for code that runs on both.
"""

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured

if not apps.is_installed("scheduling.jobs"):
    # Before the import below, which would fail on the jobs' models with a vaguer message.
    raise ImproperlyConfigured(
        "scheduling.jobs.backends.SchedulingBackend stores each task as a keyed job: add "
        "'scheduling.jobs' to INSTALLED_APPS (and migrate)."
    )

from scheduling.jobs.backends.backend import SchedulingBackend
from scheduling.rows.djangotasks import task

__all__ = ["SchedulingBackend", "task"]
