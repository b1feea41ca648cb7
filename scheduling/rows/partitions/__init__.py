"""Scheduled tables range-partitioned on due_at, opt-in per model (docs/partitioning.md).

A model opts in with `partitioning = DuePartitions(interval=timedelta(days=1), premake=14)` or
the host's SCHEDULING_PARTITIONS; its migration converts the table with PartitionByDueTime, or
`manage.py scheduling_partitions convert` does for a table whose migrations are not the host's.
PostgreSQL only: elsewhere (SQLite, the embedded mode) every step here is a no-op.
"""

from scheduling.rows.due_partitions import DuePartitions, partitioning_of
from scheduling.rows.partitions.catalog import Partition
from scheduling.rows.partitions.moved import moved_row, retried_on_moved_rows, retrying_moved_rows
from scheduling.rows.partitions.operations import PartitionByDueTime
from scheduling.rows.partitions.tables import (
    convert,
    drop_purgeable,
    is_partitioned,
    maintain,
    maintain_all,
    partitions,
)

__all__ = [
    "DuePartitions",
    "Partition",
    "PartitionByDueTime",
    "convert",
    "drop_purgeable",
    "is_partitioned",
    "maintain",
    "maintain_all",
    "moved_row",
    "partitioning_of",
    "partitions",
    "retried_on_moved_rows",
    "retrying_moved_rows",
]
