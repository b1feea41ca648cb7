"""Where a row's creation context is kept: one table for every scheduled model, keyed like the
rows' history (the model's label and the row's pk), on the row's database.

A side table rather than a column: nothing is written or read while no tracing SDK records, and
hosts' scheduled tables keep their schema.
"""

from __future__ import annotations

from django.db import models


class CreationContext(models.Model):
    model = models.CharField(max_length=100, help_text="The scheduled model, app_label.model_name")
    row_id = models.BigIntegerField()
    # W3C trace context: the `create` span a row was scheduled in (or, for a recurring
    # occurrence, its schedule's last create or edit).
    traceparent = models.CharField(max_length=55)
    tracestate = models.CharField(max_length=512, blank=True, default="")

    class Meta:
        app_label = "scheduling"
        db_table = "scheduling_creation_context"
        constraints = [
            models.UniqueConstraint(fields=["model", "row_id"], name="creation_context_row")
        ]

    def __str__(self) -> str:
        return f"{self.model}:{self.row_id} {self.traceparent}"
