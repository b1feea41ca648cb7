"""Django's place for the framework's management commands (commands/): sweep,
scheduling_status, scheduling_purge, scheduling_partitions, scheduling_rate_limit."""
