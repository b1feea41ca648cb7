import django.db.models.deletion
import orjson
from django.conf import settings
from django.db import migrations, models


def count_run_bytes(apps, schema_editor):
    """Jobs written before: their payload and labels as compact JSON, as Job.save() counts."""
    Job = apps.get_model("scheduling_jobs", "Job")
    jobs = Job.objects.using(schema_editor.connection.alias).only("payload", "labels")
    for job in jobs.iterator(chunk_size=2000):
        size = len(orjson.dumps(job.payload, option=orjson.OPT_NON_STR_KEYS))
        size += len(orjson.dumps(job.labels, option=orjson.OPT_NON_STR_KEYS))
        Job.objects.using(schema_editor.connection.alias).filter(pk=job.pk).update(run_bytes=size)


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling_jobs", "0005_task_outcome"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="owner",
            field=models.ForeignKey(
                blank=True,
                editable=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="job",
            name="run_bytes",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.RunPython(count_run_bytes, migrations.RunPython.noop, elidable=True),
    ]
