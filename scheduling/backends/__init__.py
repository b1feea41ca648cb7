"""A django.tasks backend whose tasks are keyed jobs: `TASKS = {"default": {"BACKEND":
"scheduling.backends.SchedulingBackend"}}`, with `scheduling.jobs` installed (docs/django-tasks.md).
"""

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured

if not apps.is_installed("scheduling.jobs"):
    # Before the import below, which would fail on the jobs' models with a vaguer message.
    raise ImproperlyConfigured(
        "scheduling.backends.SchedulingBackend stores each task as a keyed job: add "
        "'scheduling.jobs' to INSTALLED_APPS (and migrate)."
    )

from scheduling.backends.backend import SchedulingBackend

__all__ = ["SchedulingBackend"]
