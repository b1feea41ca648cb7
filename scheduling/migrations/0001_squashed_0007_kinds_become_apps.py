# The framework's history, squashed: since 0007 this app owns no table. A new database applies
# this (nothing), so a host that installs neither optional app gets none of their tables; a
# database that applied 0001-0006 runs 0007 instead, and the optional apps adopt its tables.

from django.db import migrations


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("scheduling", "0001_initial"),
        ("scheduling", "0002_jobs"),
        ("scheduling", "0003_occurrence_claim_index"),
        ("scheduling", "0004_pending_due_pk_index"),
        ("scheduling", "0005_due_at_storable"),
        ("scheduling", "0006_job_run_job_status_index"),
        ("scheduling", "0007_kinds_become_apps"),
    ]

    dependencies: list[tuple[str, str]] = []

    operations: list[migrations.operations.base.Operation] = []
