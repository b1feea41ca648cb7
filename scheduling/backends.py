"""Former path, deprecated: its names now live in `scheduling.jobs.backends`, the public ones
in the facade, `scheduling`. Taking a name from here warns; the path goes in
scheduling.FORMER_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.jobs.backends import SchedulingBackend

__all__ = ["SchedulingBackend"]
__getattr__ = forwarding(__name__)
