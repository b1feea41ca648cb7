"""Hosts written to released guides, upgraded in place to this checkout's wheel.

Each host is made in a fresh virtualenv on an older wheel, built from the commit it was written
for: its migrations are made there and applied to a scratch database, and a row is scheduled
that no worker delivers yet. Then this checkout's wheel replaces the old one in the same
virtualenv, and the host, its files and its migrations untouched, migrates, checks and has both
rows (the one scheduled before the upgrade and one after) delivered and handled once by a stock
`celery -A <project> worker -B`.

- `upgrade_hosts/release_0_2_0/` follows the 0.2.0 guide (commit 966c17b): a model with a
  foreign key, a `handle_once` handler on `EventHandlerTask` imported from `scheduling.handling`
  and `scheduling.tasks`, an admin of its own from `scheduling.admin`, a receiver of
  `scheduling.signals`, the REST routes of `scheduling.api.urls`. The former paths warn, naming
  where to import from now.
- `upgrade_hosts/before_wings/` follows the guide from before the wings (commit 5224e9e): quiet
  hours from `scheduling.quiet` (a field's default, which Django writes into the migration, and
  the model's `quiet_hours`), a table partitioned by due time (`DuePartitions` on the model,
  `TuneScheduledTable` and `PartitionByDueTime` in a migration written by hand). Those paths
  import for good, without a warning.
- The same host with its migrations squashed before the upgrade: Django wrote each operation's
  class by its module then, `scheduling.partitions.operations.PartitionByDueTime`.

The wheels are built once a session: this checkout's by conftest's `wheel`, the older ones from
`git archive <commit>` (uv when it is there, as .ci/setup does; pip otherwise).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

import scheduling
from tests.packaging.test_wheel import (
    ROOT,
    flush_redis_after,  # noqa: F401 (autouse: no host key outlives the test)
    fresh_virtualenv,
    host_environment,
    manager,
    run,
    scratch_database,
    stop,
)

UPGRADE_HOSTS = Path(__file__).parent / "upgrade_hosts"
RELEASE_0_2_0 = "966c17b"  # CHANGELOG: [0.2.0]
BEFORE_THE_WINGS = "5224e9e"  # the last commit before the modules moved into the wings
PARIS = ZoneInfo("Europe/Paris")
# `python -W ...`: every DeprecationWarning shown, not only those raised in __main__.
SHOW_DEPRECATIONS = ["-W", "always::DeprecationWarning"]
DEPRECATED_NAME = re.compile(
    r"DeprecationWarning: (scheduling[\w.]*) is deprecated and goes in [\d.]+: "
    r"import (\w+) from ([\w.]+) instead\."
)

SCHEDULE_ORDER_EMAIL = """
from django.utils import timezone
from orders.models import Order, ScheduledOrderEmail

order = Order.objects.create(email="a@example.com")
print(ScheduledOrderEmail.objects.create(order=order, due_at=timezone.now()).pk)
"""

# Due at the last noon in Paris: past, so due now, and outside the model's quiet hours.
SCHEDULE_REMINDER = """
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.utils import timezone
from reminders.models import Patient, ScheduledReminder

paris = ZoneInfo("Europe/Paris")
now = timezone.now().astimezone(paris)
noon = datetime.combine(now.date(), time(12), paris)
if noon > now:
    noon -= timedelta(days=1)
patient = Patient.objects.create(name="Ada")
print(ScheduledReminder.objects.create(patient=patient, due_at=noon).pk)
"""

# After the upgrade: the table is still partitioned, with its partitions; a reminder asked for
# at 23:00 in Paris is held to 07:00; a patient's default quiet hours are DailyQuietHours()'s
# text. Then one more reminder, due at once.
QUIET_AND_PARTITIONED = (
    """
import io
import json
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from reminders.models import Patient, ScheduledReminder

status = io.StringIO()
call_command("scheduling_partitions", "status", stdout=status)
with connection.cursor() as cursor:
    cursor.execute("SELECT relkind FROM pg_class WHERE relname = 'scheduled_reminder'")
    (kind,) = cursor.fetchone()
paris = ZoneInfo("Europe/Paris")
tomorrow = timezone.now().astimezone(paris).date() + timedelta(days=1)
patient = Patient.objects.create(name="Bo")
night = ScheduledReminder.objects.create(
    patient=patient, due_at=datetime.combine(tomorrow, time(23), paris)
)
night.refresh_from_db()
print(json.dumps({
    "table": kind,
    "default partition": "scheduled_reminder_default" in status.getvalue(),
    "asked for": night.business_due_at.astimezone(paris).isoformat(),
    "held to": night.due_at.astimezone(paris).isoformat(),
    "default quiet hours": Patient.objects.get(pk=patient.pk).quiet_hours,
}))
"""
    + SCHEDULE_REMINDER
)

ROWS = """
import json
from django.apps import apps

model = apps.get_model({label!r})
print(json.dumps({{
    row.pk: [row.status, row.handled_at is not None, row.last_error]
    for row in model.objects.filter(pk__in={pks!r})
}}))
"""

# The 0.2.0 host's own admin (with the inline on its orders) and the REST routes, after the
# upgrade, as a superuser sees them.
WEB_CHECKS = """
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client
from django.test.utils import setup_test_environment
from orders.models import Order, ScheduledOrderEmail

setup_test_environment()
client = Client()
client.force_login(User.objects.create_superuser("root", "root@example.com", "unused"))
order = Order.objects.first()
row = ScheduledOrderEmail.objects.filter(order=order).first()
events = "/api/scheduling/events/orders/scheduledorderemail/"
listed = client.get(events)
history = client.get(f"{events}{row.pk}/history/")
cancelled = client.post(
    f"{events}cancel/", {"filter": {"order": order.pk}, "reason": "test"},
    content_type="application/json",
)
print(json.dumps({
    "admin": type(admin.site._registry[ScheduledOrderEmail]).__name__,
    "changelist": client.get("/admin/orders/scheduledorderemail/").status_code,
    "order page": client.get(f"/admin/orders/order/{order.pk}/change/").status_code,
    "list": [listed.status_code, listed.json()["count"]],
    "history": [history.status_code, [entry["kind"] for entry in history.json()["results"]][:1]],
    "cancel": [cancelled.status_code, cancelled.json()],
}))
"""


@pytest.fixture(scope="session")
def wheel_0_2_0(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wheel_of_commit(RELEASE_0_2_0, tmp_path_factory.mktemp("wheel-0.2.0"))


@pytest.fixture(scope="session")
def wheel_before_the_wings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wheel_of_commit(BEFORE_THE_WINGS, tmp_path_factory.mktemp("wheel-before-wings"))


@pytest.mark.slow
def test_a_host_of_0_2_0_upgrades_migrates_and_delivers(
    wheel: Path, wheel_0_2_0: Path, tmp_path: Path
) -> None:
    python = old_virtualenv(tmp_path / "venv", wheel_0_2_0)
    project = tmp_path / "store"
    write_upgrade_host(python, project, UPGRADE_HOSTS / "release_0_2_0", "store", "orders")
    effects = tmp_path / "effects.txt"
    effects.touch()

    with scratch_database() as database:
        env = host_environment(database, effects)
        manage = manager(python, project, env)
        manage("makemigrations", "orders")
        manage("migrate", "--no-input")
        before = int(manage("shell", "-c", SCHEDULE_ORDER_EMAIL).split()[-1])

        upgrade(python, wheel)
        added = manage("makemigrations")
        print(added)
        assert "+ Add field effect_started_at to scheduledorderemail" in added
        assert only_additions(added, "orders")
        manage("migrate", "--no-input")
        checked = run([str(python), *SHOW_DEPRECATIONS, "manage.py", "check"], cwd=project, env=env)
        print(checked)
        assert "System check identified no issues" in checked
        assert deprecations(checked) == {
            ("scheduling.handling", "handle_once", "scheduling"),
            ("scheduling.signals", "event_gave_up", "scheduling"),
            ("scheduling.tasks", "EventHandlerTask", "scheduling"),
        }
        after = int(manage("shell", "-c", SCHEDULE_ORDER_EMAIL).split()[-1])

        log = delivered_by_worker(python, project, "store", env, tmp_path, effects, count=2)
        assert sorted(effects.read_text().splitlines()) == sorted(
            f"orders.scheduledorderemail:{pk}:v1" for pk in (before, after)
        ), log
        rows = ROWS.format(label="orders.ScheduledOrderEmail", pks=[before, after])
        answers = manage("shell", "-c", rows + WEB_CHECKS).splitlines()
        assert json.loads(answers[-2]) == {
            str(pk): ["delivered", True, ""] for pk in (before, after)
        }, log
        assert json.loads(answers[-1]) == {
            "admin": "ScheduledOrderEmailAdmin",
            "changelist": 200,
            "order page": 200,
            "list": [200, 2],
            "history": [200, ["scheduled"]],
            "cancel": [200, {"count": 0}],  # both handled: nothing pending to cancel
        }


@pytest.mark.slow
def test_a_host_from_before_the_wings_upgrades_with_its_migrations_untouched(
    wheel: Path, wheel_before_the_wings: Path, tmp_path: Path
) -> None:
    python = old_virtualenv(tmp_path / "venv", wheel_before_the_wings)
    project = tmp_path / "clinic"
    write_before_wings_host(python, project)
    migrations = project / "reminders" / "migrations"
    effects = tmp_path / "effects.txt"
    effects.touch()

    with scratch_database() as database:
        env = host_environment(database, effects)
        manage = manager(python, project, env)
        make_before_wings_migrations(manage, migrations)
        manage("migrate", "--no-input")
        before = int(manage("shell", "-c", SCHEDULE_REMINDER).split()[-1])
        old_migrations = {path.name: path.read_text() for path in migrations.glob("0*.py")}
        assert "default=scheduling.quiet.DailyQuietHours" in old_migrations["0001_initial.py"]

        upgrade(python, wheel)
        assert only_additions(manage("makemigrations"), "reminders")
        manage("migrate", "--no-input")
        checked = run(
            [str(python), *SHOW_DEPRECATIONS, "manage.py", "check", "--database", "default"],
            cwd=project,
            env=env,
        )
        print(checked)
        assert "System check identified no issues" in checked
        # scheduling.quiet, .partitions and .migration_operations stay, and do not warn.
        assert deprecations(checked) == {("scheduling.handling", "handle_once", "scheduling")}
        for name, text in old_migrations.items():
            assert (migrations / name).read_text() == text, f"{name} was changed"
        answers = manage("shell", "-c", QUIET_AND_PARTITIONED).splitlines()
        quiet = json.loads(answers[-2])
        asked = datetime.fromisoformat(quiet.pop("asked for"))
        assert asked.time() == dt.time(23), asked
        assert quiet == {
            "table": "p",  # partitioned
            "default partition": True,
            "held to": datetime.combine(
                asked.date() + timedelta(days=1), dt.time(7), PARIS
            ).isoformat(),
            "default quiet hours": "22:00 to 07:00 (Europe/Paris)",
        }
        after = int(answers[-1])

        log = delivered_by_worker(python, project, "clinic", env, tmp_path, effects, count=2)
        assert sorted(effects.read_text().splitlines()) == sorted(
            f"reminders.scheduledreminder:{pk}:v1" for pk in (before, after)
        ), log
        rows = ROWS.format(label="reminders.ScheduledReminder", pks=[before, after])
        assert json.loads(manage("shell", "-c", rows).splitlines()[-1]) == {
            str(pk): ["delivered", True, ""] for pk in (before, after)
        }, log


@pytest.mark.slow
def test_a_host_that_squashed_its_migrations_before_the_wings_migrates(
    wheel: Path, wheel_before_the_wings: Path, tmp_path: Path
) -> None:
    """squashmigrations writes each operation's class by its module: before the wings,
    `scheduling.partitions.operations.PartitionByDueTime`."""
    python = old_virtualenv(tmp_path / "venv", wheel_before_the_wings)
    project = tmp_path / "clinic"
    write_before_wings_host(python, project)
    migrations = project / "reminders" / "migrations"

    with scratch_database() as database:
        env = host_environment(database, tmp_path / "effects.txt")
        manage = manager(python, project, env)
        make_before_wings_migrations(manage, migrations)
        manage("squashmigrations", "reminders", "0002", "--no-input")
        (squashed,) = migrations.glob("0001_squashed_*.py")
        text = squashed.read_text()
        assert "scheduling.partitions.operations.PartitionByDueTime(" in text, text

        upgrade(python, wheel)
        migrated = subprocess.run(
            [str(python), "manage.py", "migrate", "--no-input"],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert migrated.returncode == 0, migrated.stdout
        assert "System check identified no issues" in manage("check", "--database", "default")


def write_before_wings_host(python: Path, project: Path) -> None:
    write_upgrade_host(python, project, UPGRADE_HOSTS / "before_wings", "clinic", "reminders")


def make_before_wings_migrations(manage: Callable[..., str], migrations: Path) -> None:
    """makemigrations writes the first; the one that partitions the table is the host's own,
    written by hand as the partitioning guide showed."""
    manage("makemigrations", "reminders")
    written = UPGRADE_HOSTS / "before_wings" / "reminders" / "migrations"
    for migration in written.glob("0*.py"):
        shutil.copyfile(migration, migrations / migration.name)


def wheel_of_commit(commit: str, work: Path) -> Path:
    """The wheel of an older commit of this repository, built from its tree alone."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], capture_output=True)
    if archive.returncode:
        pytest.fail(
            f"git archive {commit} failed (the upgrade tests need the repository's history, "
            f"not a shallow clone):\n{archive.stderr.decode()}"
        )
    source = work / "source"
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(source, filter="data")
    tool = uv()
    if tool:
        run([tool, "build", "--wheel", "-q", "-o", str(work), str(source)])
    else:
        run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(work), str(source)])
    (built,) = work.glob("django_scheduling-*.whl")
    return built


def uv() -> str | None:
    """uv beside this Python (the project's virtualenv, as .ci/setup installs it) or on PATH;
    None: pip instead."""
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.exists() else shutil.which("uv")


def old_virtualenv(path: Path, wheel: Path) -> Path:
    """A new virtualenv with an older wheel and the host's database driver."""
    tool = uv()
    if not tool:
        return fresh_virtualenv(path, wheel)
    run([tool, "venv", "-q", "--python", sys.executable, str(path)])
    python = path / "bin" / "python"
    run([*uv_install(tool, python), str(wheel), "psycopg[binary]"])
    assert not has_wings(python)
    return python


def upgrade(python: Path, wheel: Path) -> None:
    """This checkout's wheel in place of the old one (both say the same version: replaced, not
    skipped), with what it needs besides."""
    tool = uv()
    if tool:
        run([*uv_install(tool, python), "--reinstall-package", "django-scheduling", str(wheel)])
    else:
        pip = [str(python), "-m", "pip", "install", "-q"]
        run([*pip, "--force-reinstall", "--no-deps", str(wheel)])
        run([*pip, str(wheel)])  # what it needs that the old one did not
    assert has_wings(python)


def uv_install(tool: str, python: Path) -> list[str]:
    """`uv pip install` into the virtualenv, compiling bytecode as pip does: where
    PYTHONDONTWRITEBYTECODE is set, each of the host's commands would otherwise compile every
    module it imports again (seconds each)."""
    return [tool, "pip", "install", "-q", "--compile-bytecode", "--python", str(python)]


def has_wings(python: Path) -> bool:
    """Whether the installed framework is this checkout's (its modules in wings)."""
    found = "import importlib.util; print(importlib.util.find_spec('scheduling.rows') is not None)"
    # Run from the virtualenv, not this checkout, whose own `scheduling` would be found first.
    return run([str(python), "-c", found], cwd=python.parent).strip() == "True"


def write_upgrade_host(python: Path, project: Path, template: Path, name: str, app: str) -> None:
    """`django-admin startproject <name>` and `startapp <app>`, then the template's Python files
    (its hand-written migrations are copied once makemigrations has written the first) and its
    settings additions appended to settings.py."""
    project.mkdir()
    django_admin = str(python.parent / "django-admin")
    run([django_admin, "startproject", name, str(project)])
    run([django_admin, "startapp", app], cwd=project)
    for source in template.rglob("*.py"):
        if "migrations" not in source.relative_to(template).parts:
            shutil.copyfile(source, project / source.relative_to(template))
    with open(project / name / "settings.py", "a") as settings_file:
        settings_file.write("\n" + (template / name / "settings_additions.txt").read_text())


def only_additions(makemigrations: str, app: str) -> bool:
    """Whether makemigrations (for every app) wrote migrations of the host's app only, each
    adding (fields, indexes): an upgrade that alters or removes what a host's migrations made
    would rewrite its tables, and one that needs a migration of the framework's apps is missing
    it from the wheel."""
    written = re.findall(r"^\s+(\S+\.py)$", makemigrations, re.M)
    changes = re.findall(r"^\s+([-+~]) (.*)$", makemigrations, re.M)
    return all(path.startswith(f"{app}/migrations/") for path in written) and all(
        sign == "+" and change.startswith("Add ") for sign, change in changes
    )


def deprecations(output: str) -> set[tuple[str, str, str]]:
    """The framework's deprecation warnings in the output: (former path, name, where to import it
    from now), each new home a public one."""
    found = set(DEPRECATED_NAME.findall(output))
    for old, _, home in found:
        assert old in scheduling.DEPRECATED, f"{old} warns but is not a deprecated path"
        assert home == "scheduling" or home in scheduling.PUBLIC_MODULES, (
            f"{old} sends hosts to {home}, which is not public"
        )
    return found


def delivered_by_worker(
    python: Path,
    project: Path,
    app: str,
    env: dict[str, str],
    tmp_path: Path,
    effects: Path,
    count: int,
) -> str:
    """Runs a stock worker with beat embedded until `count` effects are written, and three
    seconds more (a second delivery would show by then); its log, which holds no error."""
    log = tmp_path / "worker.log"
    command = [str(python), "-m", "celery", "-A", app, "worker", "-B", "-l", "info"]
    command += ["--concurrency", "1", "-s", str(tmp_path / "beat-schedule")]
    with open(log, "wb") as output:
        worker = subprocess.Popen(
            command,
            cwd=project,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for(lambda: len(effects.read_text().splitlines()) >= count, worker, log)
        time.sleep(3)
    finally:
        stop(worker)
    text = log.read_text()
    assert "Traceback" not in text, text
    assert "ERROR/" not in text, text
    return text


def wait_for(done: Callable[[], bool], worker: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert worker.poll() is None, f"the worker exited:\n{log.read_text()}"
        assert time.monotonic() < deadline, f"nothing delivered in time:\n{log.read_text()}"
        time.sleep(0.2)
