from typing import Any

from django.db import models

from scheduling.rows.models import ScheduledEvent


class Account(models.Model):
    name = models.CharField(max_length=100)

    def __str__(self) -> str:
        return self.name


class ScheduledReminder(ScheduledEvent):
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="reminders")

    handler_task = "remoteapp.send_reminder"
    queue = "remoteapp"
    related_for_event = ("account",)
    search_fields = ("account__name",)

    class Meta(ScheduledEvent.Meta):
        db_table = "scheduled_reminder"

    def event_data(self) -> dict[str, Any]:
        return {"account": self.account.name}


class ReminderSent(models.Model):
    """The user-visible effect, written in the handling's transaction: duplicates would show
    as extra rows."""

    event_id = models.CharField(max_length=200)
    account = models.ForeignKey(Account, on_delete=models.CASCADE)

    def __str__(self) -> str:
        return self.event_id
