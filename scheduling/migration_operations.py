"""Former path, kept for good: hosts' migrations name it. Its names live in `scheduling.rows.migration_operations`."""

from typing import TYPE_CHECKING

from scheduling import forwarding

if TYPE_CHECKING:
    from scheduling.rows.migration_operations import *  # noqa: F403

__getattr__ = forwarding(__name__)
