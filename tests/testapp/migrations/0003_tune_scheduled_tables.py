from django.db import migrations

from scheduling.rows.migration_operations import TuneScheduledTable


class Migration(migrations.Migration):
    dependencies = [("testapp", "0002_notice")]

    operations = [TuneScheduledTable("scheduled_ping"), TuneScheduledTable("scheduled_notice")]
