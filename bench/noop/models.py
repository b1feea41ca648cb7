"""Scheduled rows about nothing: their handlers do no work, so a run measures the framework's
own cost per event (the message, the lock, the handled_at write, the metrics)."""

from scheduling.rows.models import ScheduledEvent


class ScheduledNoop(ScheduledEvent):
    """One event a message, handled through handle_once (at least once)."""

    handler_task = "bench.noop_single"
    queue = "bench_noop"

    class Meta(ScheduledEvent.Meta):
        app_label = "bench_noop"
        db_table = "bench_scheduled_noop"


class ScheduledNoopBatch(ScheduledEvent):
    """Up to 100 events a message, handled through handle_batch (issue 34's batched API)."""

    handler_task = "bench.noop_batch"
    queue = "bench_noop_batch"
    handler_batch_size = 100

    class Meta(ScheduledEvent.Meta):
        app_label = "bench_noop"
        db_table = "bench_scheduled_noop_batch"
