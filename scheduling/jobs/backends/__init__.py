"""A django.tasks backend whose tasks are keyed jobs: `TASKS = {"default": {"BACKEND":
"scheduling.jobs.backends.SchedulingBackend"}}`, with `scheduling.jobs` installed (docs/django-tasks.md).
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

__all__ = ["SchedulingBackend"]
