# Recurring schedules and keyed jobs became the optional apps scheduling.recurring and
# scheduling.jobs. Their tables stay where they are: this app forgets the models, and the new
# apps' first migrations adopt the existing tables (scheduling.rows.migration_operations.AdoptOrCreateModel).

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling", "0006_job_run_job_status_index"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="ScheduledJobRun"),
                migrations.DeleteModel(name="Job"),
                migrations.DeleteModel(name="ScheduledOccurrence"),
                migrations.DeleteModel(name="RecurringSchedule"),
            ],
            database_operations=[],
        ),
    ]
