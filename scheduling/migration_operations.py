"""Public, and kept for good: the operations a host's migrations name (Django writes this path
into them).

    from scheduling.migration_operations import TuneScheduledTable
"""

from scheduling.rows.migration_operations import (
    AdoptOrCreateModel,
    TuneScheduledTable,
    move_content_types,
)

__all__ = ["AdoptOrCreateModel", "TuneScheduledTable", "move_content_types"]
