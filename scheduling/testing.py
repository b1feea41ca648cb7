"""Former path, deprecated: its names now live in `scheduling.delivery.testing`, the public ones
in the facade, `scheduling`. Taking a name from here warns; the path goes in
scheduling.FORMER_PATHS_END."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.delivery.testing import assert_scheduled, run_due, scheduled

__all__ = ["assert_scheduled", "run_due", "scheduled"]
__getattr__ = forwarding(__name__)
