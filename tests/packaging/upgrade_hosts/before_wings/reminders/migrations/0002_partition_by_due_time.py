# Written by hand, as docs/partitioning.md showed before the wings.
from django.db import migrations
from scheduling.migration_operations import TuneScheduledTable
from scheduling.partitions import PartitionByDueTime


class Migration(migrations.Migration):
    dependencies = [("reminders", "0001_initial")]

    operations = [
        TuneScheduledTable("scheduled_reminder"),
        PartitionByDueTime("ScheduledReminder", interval="1d", premake=14),
    ]
