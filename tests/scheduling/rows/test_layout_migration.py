"""The layout change: recurring schedules and keyed jobs left the `scheduling` app for the
apps `scheduling.recurring` and `scheduling.jobs`, which adopt the tables where they exist.

Each test migrates a scratch PostgreSQL database of its own, in child processes (a migration
loader reads the history once per process, as `manage.py migrate` does on a real host).
"""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from django.conf import settings
from psycopg import sql

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

TABLES = ("recurring_schedule", "scheduled_occurrence", "scheduling_job", "scheduled_job_run")
RESULT = "RESULT "

# The rows each layout reads back, through whichever models it has; the same for both.
SNAPSHOT = """
import json


def snapshot(RecurringSchedule, ScheduledOccurrence, Job, ScheduledJobRun):
    def rows(model, *fields):
        return list(model.objects.order_by("pk").values(*fields))

    return {
        "schedules": rows(RecurringSchedule, "id", "name", "cron", "queue", "version", "enabled"),
        "occurrences": rows(
            ScheduledOccurrence, "id", "schedule_id", "due_at", "status", "version",
            "schedule_version", "attempts", "delivered_at", "manual",
        ),
        "jobs": rows(Job, "id", "key", "callback", "payload", "labels"),
        "runs": rows(
            ScheduledJobRun, "id", "job_id", "due_at", "status", "version", "attempts",
            "delivered_at",
        ),
    }


def report(facts):
    print("RESULT " + json.dumps(facts, default=str, sort_keys=True))
"""

# Step 1: migrate to the old layout (scheduling 0001-0006, loaded unsquashed), then write rows
# and a permission through that state's historical models.
OLD_LAYOUT = (
    SNAPSHOT
    + """
from datetime import UTC, datetime

import django

django.setup()

from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

executor = MigrationExecutor(connection)
executor.loader = MigrationLoader(connection, replace_migrations=False)
leaves = [key for key in executor.loader.graph.leaf_nodes() if key[0] in ("contenttypes", "auth")]
targets = [("scheduling", "0006_job_run_job_status_index"), *leaves]
executor.migrate(targets)
apps = executor.loader.project_state(targets).apps

RecurringSchedule = apps.get_model("scheduling", "RecurringSchedule")
ScheduledOccurrence = apps.get_model("scheduling", "ScheduledOccurrence")
Job = apps.get_model("scheduling", "Job")
ScheduledJobRun = apps.get_model("scheduling", "ScheduledJobRun")
ContentType = apps.get_model("contenttypes", "ContentType")
Permission = apps.get_model("auth", "Permission")
User = apps.get_model("auth", "User")

delivered_at = datetime(2026, 11, 21, 3, 0, 1, tzinfo=UTC)
schedule = RecurringSchedule.objects.create(name="nightly-report", cron="0 3 * * *", queue="reports", version=3)
ScheduledOccurrence.objects.create(
    schedule=schedule, due_at=datetime(2026, 11, 21, 3, 0, tzinfo=UTC), status="delivered",
    version=2, schedule_version=3, attempts=1, delivered_at=delivered_at,
)
ScheduledOccurrence.objects.create(
    schedule=schedule, due_at=datetime(2026, 11, 22, 3, 0, tzinfo=UTC), schedule_version=3
)
job = Job.objects.create(
    key="invoice-42", callback={"type": "queue", "queue": "billing"},
    payload={"invoice": 42}, labels={"tenant": "acme"},
)
ScheduledJobRun.objects.create(
    job=job, due_at=datetime(2026, 11, 21, 9, 0, tzinfo=UTC), status="delivered", version=1,
    attempts=1, delivered_at=delivered_at,
)
ScheduledJobRun.objects.create(job=job, due_at=datetime(2026, 12, 1, 9, 0, tzinfo=UTC), version=4)

types = {
    model: ContentType.objects.create(app_label="scheduling", model=model)
    for model in ("recurringschedule", "scheduledoccurrence", "job", "scheduledjobrun")
}
change_job = Permission.objects.create(
    content_type=types["job"], codename="change_job", name="Can change job"
)
view_occurrence = Permission.objects.create(
    content_type=types["scheduledoccurrence"], codename="view_scheduledoccurrence",
    name="Can view scheduled occurrence",
)
operator = User.objects.create(username="operator", password="!", is_active=True)
operator.user_permissions.add(change_job, view_occurrence)

report(snapshot(RecurringSchedule, ScheduledOccurrence, Job, ScheduledJobRun))
"""
)

# Step 3: what the migrated database holds, read through the new apps' models.
NEW_LAYOUT = (
    SNAPSHOT
    + """
from datetime import UTC, datetime
from io import StringIO

import django

django.setup()

from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.recurring.models import RecurringSchedule, ScheduledOccurrence


def exits_cleanly(*args, **options):
    out = StringIO()
    try:
        call_command(*args, stdout=out, stderr=out, **options)
    except SystemExit as exit:
        return {"code": exit.code, "output": out.getvalue()}
    return {"code": 0, "output": out.getvalue()}


facts = snapshot(RecurringSchedule, ScheduledOccurrence, Job, ScheduledJobRun)
facts["content_types"] = sorted(
    ContentType.objects.filter(
        model__in=["recurringschedule", "scheduledoccurrence", "job", "scheduledjobrun"]
    ).values_list("app_label", "model")
)
operator = User.objects.get(username="operator")
facts["perms"] = {
    name: operator.has_perm(name)
    for name in (
        "scheduling_jobs.change_job",
        "scheduling_recurring.view_scheduledoccurrence",
        "scheduling.change_job",
    )
}
facts["applied"] = sorted(
    f"{app}.{name}"
    for app, name in MigrationRecorder(connection).applied_migrations()
    if app.startswith("scheduling")
)
facts["migrate_check"] = exits_cleanly("migrate", check_unapplied=True)
facts["makemigrations_check"] = exits_cleanly("makemigrations", check_changes=True, dry_run=True)

# The adopted tables keep handing out ids after the old rows'.
job = Job.objects.create(key="after-adoption", callback={"type": "queue", "queue": "billing"})
run = ScheduledJobRun.objects.bulk_create(
    [ScheduledJobRun(job=job, due_at=datetime(2026, 12, 2, 9, 0, tzinfo=UTC))]
)[0]
facts["new_ids"] = {"job": job.pk, "run": run.pk}
report(facts)
"""
)


def admin_connection() -> psycopg.Connection[Any]:
    db = settings.DATABASES["default"]
    return psycopg.connect(
        host=db["HOST"],
        port=db["PORT"] or 5432,
        user=db["USER"],
        password=db.get("PASSWORD") or None,
        dbname="postgres",
        autocommit=True,
        connect_timeout=5,
    )


def drop(name: str) -> None:
    with admin_connection() as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@contextmanager
def scratch_database(purpose: str) -> Iterator[str]:
    """An empty database of this test run's own (named after its Redis pair), dropped after."""
    name = f"test_scheduling_{purpose}_{os.environ['TEST_REDIS_PAIR']}"
    drop(name)  # left over by a run that was killed
    with admin_connection() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        drop(name)


def database_url(name: str) -> str:
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT'] or 5432}/{name}"


def run(database: str, *command: str) -> str:
    """A Python child process (`-c script` or manage.py arguments) on `database`; its stdout."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": database_url(database),
        "PYTHONPATH": str(ROOT),
    }
    result = subprocess.run(
        [sys.executable, *command], env=env, cwd=ROOT, capture_output=True, text=True, timeout=240
    )
    assert result.returncode == 0, f"{command[:2]} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def run_script(database: str, script: str) -> Any:
    output = run(database, "-c", script)
    [line] = [line for line in output.splitlines() if line.startswith(RESULT)]
    return json.loads(line.removeprefix(RESULT))


def migrate(database: str, *args: str) -> str:
    return run(database, str(ROOT / "manage.py"), "migrate", "--no-input", *args)


def query(database: str, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    db = settings.DATABASES["default"]
    with psycopg.connect(
        host=db["HOST"], port=db["PORT"] or 5432, user=db["USER"], dbname=database
    ) as conn:
        return conn.execute(statement, params).fetchall()


def existing_tables(database: str) -> set[str]:
    rows = query(
        database, "SELECT tablename FROM pg_tables WHERE tablename = ANY(%s)", (list(TABLES),)
    )
    return {table for (table,) in rows}


def schema(database: str) -> dict[str, list[tuple[Any, ...]]]:
    """The four tables as PostgreSQL has them: columns, indexes, constraints, storage options."""
    tables = (list(TABLES),)
    return {
        "columns": query(
            database,
            "SELECT table_name, column_name, data_type, is_nullable, column_default, is_identity"
            " FROM information_schema.columns WHERE table_name = ANY(%s)"
            " ORDER BY table_name, column_name",
            tables,
        ),
        "indexes": query(
            database,
            "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%s)"
            " ORDER BY tablename, indexname",
            tables,
        ),
        "constraints": query(
            database,
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE conrelid::regclass::text = ANY(%s) ORDER BY 1, 2",
            tables,
        ),
        "options": query(
            database,
            "SELECT relname, reloptions FROM pg_class WHERE relname = ANY(%s) ORDER BY relname",
            tables,
        ),
    }


def test_an_old_layout_database_keeps_its_rows_and_permissions() -> None:
    with scratch_database("layout_old") as old:
        before = run_script(old, OLD_LAYOUT)
        assert existing_tables(old) == set(TABLES)

        output = migrate(old)
        # 0001-0006 were applied, so the squash does not apply: 0007 runs, and the new apps
        # adopt the tables.
        assert "Applying scheduling.0007_kinds_become_apps... OK" in output
        assert "scheduling.0001_squashed" not in output
        assert "Applying scheduling_recurring.0001_initial... OK" in output
        assert "Applying scheduling_jobs.0001_initial... OK" in output

        after = run_script(old, NEW_LAYOUT)
        adopted = schema(old)

    # Every row, with its id, status and version, read through the new models.
    for kind in ("schedules", "occurrences", "jobs", "runs"):
        assert after[kind] == before[kind], kind
    assert [(row["status"], row["version"]) for row in after["occurrences"]] == [
        ("delivered", 2),
        ("pending", 1),
    ]
    assert [(row["status"], row["version"]) for row in after["runs"]] == [
        ("delivered", 1),
        ("pending", 4),
    ]
    assert after["new_ids"]["job"] > max(row["id"] for row in before["jobs"])
    assert after["new_ids"]["run"] > max(row["id"] for row in before["runs"])

    # The content types moved, so the permissions granted on them follow the models.
    assert after["content_types"] == [
        ["scheduling_jobs", "job"],
        ["scheduling_jobs", "scheduledjobrun"],
        ["scheduling_recurring", "recurringschedule"],
        ["scheduling_recurring", "scheduledoccurrence"],
    ]
    assert after["perms"] == {
        "scheduling_jobs.change_job": True,
        "scheduling_recurring.view_scheduledoccurrence": True,
        "scheduling.change_job": False,
    }

    # The history is complete (the squash recorded too) and matches the models.
    assert {
        "scheduling.0006_job_run_job_status_index",
        "scheduling.0007_kinds_become_apps",
        "scheduling.0001_squashed_0007_kinds_become_apps",
        "scheduling_recurring.0001_initial",
        "scheduling_jobs.0001_initial",
    } <= set(after["applied"])
    assert after["migrate_check"]["code"] == 0, after["migrate_check"]["output"]
    assert after["makemigrations_check"]["code"] == 0, after["makemigrations_check"]["output"]

    # The adopted tables kept their partial indexes, constraints and autovacuum settings...
    indexes = {name for _table, name, _definition in adopted["indexes"]}
    assert {
        "occurrence_pending_due_id",
        "scheduled_j_due_at_5b1270_idx",
        "one_pending_occurrence_per_schedule",  # a partial unique constraint is an index
    } <= indexes
    constraints = {name for _table, name, _definition in adopted["constraints"]}
    assert {
        "scheduled_occurrence_due_at_storable",
        "scheduled_job_run_due_at_storable",
        "recurring_schedule_one_target",
    } <= constraints
    options = dict(adopted["options"])
    for table in ("scheduled_occurrence", "scheduled_job_run"):
        assert "autovacuum_vacuum_scale_factor=0.01" in options[table], table

    # ... and are exactly what a new database gets from the new apps' migrations.
    with scratch_database("layout_new") as new:
        migrate(new)
        created = schema(new)
    assert adopted == created


def test_a_new_database_gets_the_tables_only_from_the_optional_apps() -> None:
    with scratch_database("layout_fresh") as fresh:
        output = migrate(fresh, "scheduling")
        assert "Applying scheduling.0001_squashed_0007_kinds_become_apps... OK" in output
        assert existing_tables(fresh) == set()

        migrate(fresh)
        assert existing_tables(fresh) == set(TABLES)
