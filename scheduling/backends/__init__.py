"""A django.tasks backend whose tasks are keyed jobs: `TASKS = {"default": {"BACKEND":
"scheduling.backends.SchedulingBackend"}}`, with `scheduling.jobs` installed (docs/django-tasks.md).
"""

from scheduling.backends.backend import SchedulingBackend

__all__ = ["SchedulingBackend"]
