"""One table for every scheduled model's history, keyed by the model's label and the row's pk.

A row's happy path (scheduled, published, handled) costs no entry: the row's columns tell it.
Only the other transitions write here, so the sweep's and the handler's hot path is unchanged.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now


class Kind(models.TextChoices):
    SCHEDULED = "scheduled", "Scheduled"
    RESCHEDULED = "rescheduled", "Rescheduled"
    CANCELLED = "cancelled", "Cancelled"
    PUBLISHED = "published", "Published"
    REDELIVERED = "redelivered", "Redelivered"
    HANDLING_FAILED = "handling_failed", "Handling failed"
    HANDLED = "handled", "Handled"
    FAILED = "failed", "Failed"
    RETRIED = "retried", "Retried"
    EXPIRED = "expired", "Expired"


class EventHistory(models.Model):
    model = models.CharField(max_length=100, help_text="The scheduled model, app_label.model_name")
    row_id = models.BigIntegerField()
    at = models.DateTimeField(db_default=Now())  # the database's clock
    kind = models.CharField(max_length=20, choices=Kind.choices)
    attempt = models.PositiveIntegerField(default=0)
    version = models.PositiveIntegerField(default=1)
    actor = models.CharField(max_length=200, blank=True, default="")
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        # Explicit: a host's scheduled model then imports without "scheduling" installed, and
        # its own check (ScheduledEvent.check) says what is missing.
        app_label = "scheduling"
        db_table = "scheduling_event_history"
        verbose_name_plural = "event history"
        # Serves a row's timeline (WHERE model = %s AND row_id = %s ORDER BY at) and the purge's
        # removal of a purged row's entries.
        indexes = [models.Index(fields=["model", "row_id", "at"], name="event_history_row")]

    def __str__(self) -> str:
        return f"{self.model}:{self.row_id} {self.kind} at {self.at}"
