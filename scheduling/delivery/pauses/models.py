"""A paused model is one row here, in the default database whatever database the model's rows
live on: it is the operators' state, read by every sweeper, not the rows' state."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

PERMISSION = "pause_delivery"  # scheduling.pause_delivery: pause and resume, REST and admin


class DeliveryPause(models.Model):
    model = models.CharField(
        max_length=100, unique=True, help_text="The paused scheduled model, app_label.model_name"
    )
    reason = models.CharField(max_length=500, blank=True, default="")
    paused_by = models.CharField(max_length=200)
    paused_at = models.DateTimeField(db_default=Now())  # the database's clock

    class Meta:
        app_label = "scheduling"
        db_table = "scheduling_delivery_pause"
        permissions = [(PERMISSION, "Can pause and resume the delivery of a scheduled model")]

    def __str__(self) -> str:
        return f"{self.model} paused by {self.paused_by} at {self.paused_at}"


class PauseAction(models.TextChoices):
    PAUSED = "paused", "Paused"
    RESUMED = "resumed", "Resumed"


class DeliveryPauseEntry(models.Model):
    """The history: each pause and resume, who and why; kept when the pause row goes."""

    model = models.CharField(max_length=100, help_text="The scheduled model, app_label.model_name")
    action = models.CharField(max_length=10, choices=PauseAction.choices)
    actor = models.CharField(max_length=200)
    reason = models.CharField(max_length=500, blank=True, default="")
    at = models.DateTimeField(db_default=Now())

    class Meta:
        app_label = "scheduling"
        db_table = "scheduling_delivery_pause_entry"
        verbose_name_plural = "delivery pause entries"
        # Serves a model's pause history, newest first (WHERE model = %s ORDER BY at DESC).
        indexes = [models.Index(fields=["model", "at"], name="delivery_pause_entry_model")]

    def __str__(self) -> str:
        return f"{self.model} {self.action} by {self.actor} at {self.at}"
