"""Public, and kept for good (hosts' migrations name it): a scheduled table partitioned by due
time.

    from scheduling.partitions import DuePartitions, PartitionByDueTime
"""

from scheduling.rows.partitions import DuePartitions, PartitionByDueTime

__all__ = ["DuePartitions", "PartitionByDueTime"]
