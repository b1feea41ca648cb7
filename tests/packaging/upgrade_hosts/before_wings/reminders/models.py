from datetime import time, timedelta

from django.db import models
from scheduling.models import ScheduledEvent
from scheduling.partitions import DuePartitions
from scheduling.quiet import DailyQuietHours


class Patient(models.Model):
    name = models.CharField(max_length=100)
    # The nights shown on the patient's page; its default, DailyQuietHours(), is "22:00 to
    # 07:00 (Europe/Paris)". Django writes scheduling.quiet.DailyQuietHours into the migration.
    quiet_hours = models.CharField(max_length=64, default=DailyQuietHours)

    def __str__(self) -> str:
        return self.name


class ScheduledReminder(ScheduledEvent):
    patient = models.ForeignKey(Patient, on_delete=models.CASCADE, related_name="reminders")

    handler_task = "reminders.send_reminder"
    related_for_event = ("patient",)
    quiet_hours = DailyQuietHours(start=time(22), end=time(7), tz="Europe/Paris")
    partitioning = DuePartitions(interval=timedelta(days=1), premake=14)

    class Meta(ScheduledEvent.Meta):
        db_table = "scheduled_reminder"

    def event_data(self) -> dict:
        return {"patient": self.patient.pk}
