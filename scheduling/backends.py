"""Former path, deprecated: the django.tasks backend is `scheduling.jobs.backends.SchedulingBackend`
(with `scheduling.jobs` installed). Taking a name from here warns; the path goes in
scheduling.DEPRECATED_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.jobs.backends import SchedulingBackend

__all__ = ["SchedulingBackend"]
__getattr__ = forwarding(__name__)
