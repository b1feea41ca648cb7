"""Kept for good: migrations squashed before the wings name
`scheduling.partitions.operations.PartitionByDueTime`. New migrations name
`scheduling.partitions.PartitionByDueTime`."""

from scheduling.rows.partitions import PartitionByDueTime

__all__ = ["PartitionByDueTime"]
