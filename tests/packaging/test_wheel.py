"""The wheel, installed in a fresh virtualenv, runs a new host project written to the contract
and nothing more: three settings, Celery's own lines, a model, a task; a stock
`celery -A host worker -B` (no -Q) delivers and handles the event, the admin lists the model
with no admin code of the host's, the REST API works with no REST_FRAMEWORK setting, and the
host's own tests run its handler with scheduling.delivery.testing, with no Redis and no broker.

The host project is `tests/packaging/host/` laid over what `django-admin startproject host` and
`django-admin startapp shop` write; docs/adding-scheduling.md shows the same files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from email.message import Message
from email.parser import Parser
from pathlib import Path

import psycopg
import pytest
import redis
from django.conf import settings
from psycopg.conninfo import make_conninfo

ROOT = Path(__file__).parents[2]
TEMPLATE = Path(__file__).parent / "host"
GUIDE = ROOT / "docs" / "adding-scheduling.md"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
TESTING_GUIDE = ROOT / "docs" / "testing.md"  # shows the host's own test, shop/tests.py
# Where the host's own tests find Redis and the broker: nowhere (scheduling.delivery.testing needs neither).
NOWHERE = {"REDIS_URL": "redis://127.0.0.1:1/0", "CELERY_BROKER_URL": "redis://127.0.0.1:1/1"}


@pytest.mark.slow
def test_the_wheel_holds_the_framework_alone(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    packages = {
        name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")
    }

    assert packages == {"scheduling"}, names
    assert "scheduling/static/scheduling/fire_preview.js" in names
    for app in ("scheduling", "scheduling/recurring", "scheduling/jobs"):
        assert any(name.startswith(f"{app}/migrations/0001_") for name in names), (
            f"no first migration of {app} in the wheel"
        )


@pytest.mark.slow
def test_the_wheel_is_a_package_a_registry_would_show(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    version = PROJECT["version"]
    info = f"django_scheduling-{version}.dist-info"
    metadata = wheel_metadata(archive, info)

    assert wheel.name == f"django_scheduling-{version}-py3-none-any.whl"
    assert (metadata["Name"], metadata["Version"]) == ("django-scheduling", version)
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert "Permission is hereby granted" in archive.read(f"{info}/licenses/LICENSE").decode()
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata.get_payload() == (ROOT / "README.md").read_text()
    classifiers = metadata.get_all("Classifier", [])
    for expected in (
        "Framework :: Django",
        "Framework :: Django :: 5.2",
        "Framework :: Django :: 6.0",
        "Framework :: Django :: 6.1",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.13",
        "Typing :: Typed",
    ):
        assert expected in classifiers
    assert "scheduling/py.typed" in archive.namelist()
    # What the install brings is what pyproject lists, and no test oracle (cronsim) among it.
    required = metadata.get_all("Requires-Dist", [])
    brings = distribution_names([line for line in required if "extra ==" not in line])
    assert brings == distribution_names(PROJECT["dependencies"])
    assert "cronsim" not in brings


def distribution_names(requirements: list[str]) -> list[str]:
    return sorted(
        re.split(r"[^A-Za-z0-9_.-]", requirement)[0].lower() for requirement in requirements
    )


def wheel_metadata(archive: zipfile.ZipFile, info: str) -> Message:
    return Parser().parsestr(archive.read(f"{info}/METADATA").decode())


def test_the_changelog_has_an_entry_for_this_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()

    assert re.search(
        rf"^## \[{re.escape(PROJECT['version'])}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M
    )


@pytest.mark.slow
def test_a_new_host_project_delivers_and_handles_an_event(wheel: Path, tmp_path: Path) -> None:
    python = fresh_virtualenv(tmp_path / "venv", wheel)
    project = tmp_path / "hostproject"
    write_host_project(python, project)
    effects = tmp_path / "effects.txt"
    effects.touch()

    with scratch_database() as database:
        env = host_environment(database, effects)

        manage = manager(python, project, env)
        assert "shop/migrations/0001_initial.py" in manage("makemigrations", "shop")
        # Nothing else to migrate: no model of an optional app the host left out, no index
        # name that changes between processes.
        manage("makemigrations", "--check", "--dry-run")
        manage("migrate", "--no-input")
        checked = manage("check")
        print(checked)
        assert "System check identified no issues" in checked
        tested = run(
            [str(python), "manage.py", "test", "shop", "--noinput"],
            cwd=project,
            env={**env, **NOWHERE},
        )
        print(tested)
        assert re.search(r"Ran 2 tests in .*\n\nOK", tested), tested
        paged = run_the_testing_page(python, project, {**env, **NOWHERE})
        assert re.search(r"\b1 passed\b", paged), paged  # pytest collects test_*.py: the page's

        pk = int(
            manage(
                "shell",
                "-c",
                "from django.utils import timezone; from shop.models import Order, "
                "ScheduledOrderEmail; order = Order.objects.create(email='a@example.com'); "
                "print(ScheduledOrderEmail.objects.create(order=order, due_at=timezone.now()).pk)",
            ).split()[-1]
        )

        log = tmp_path / "worker.log"
        worker = start_worker(python, project, env, log, tmp_path / "beat-schedule")
        try:
            deadline = time.monotonic() + 60
            while not effects.read_text() and time.monotonic() < deadline:
                assert worker.poll() is None, f"the worker exited:\n{log.read_text()}"
                time.sleep(0.2)
            time.sleep(3)  # a second delivery, if there were one, would show by now
        finally:
            stop(worker)

        lines = effects.read_text().splitlines()
        assert lines == [f"shop.scheduledorderemail:{pk}:v1"], f"worker:\n{log.read_text()}"

        row = json.loads(
            manage(
                "shell",
                "-c",
                "import json; from shop.models import ScheduledOrderEmail; "
                f"row = ScheduledOrderEmail.objects.get(pk={pk}); "
                "print(json.dumps({'status': row.status, 'handled': row.handled_at is not None}))",
            ).splitlines()[-1]
        )
        assert row == {"status": "delivered", "handled": True}, f"worker:\n{log.read_text()}"

        answers = json.loads(manage("shell", "-c", WEB_CHECKS).splitlines()[-1])
        assert answers == {
            "changelist": 200,
            "actions": [
                "cancel_rows",
                "deliver_now",
                "reschedule_rows",
                "retry_rows",
                "shift_rows",
            ],
            "api root": [200, ["calendars", "events/shop/scheduledorderemail", "pauses"]],
            "shop list": [200, 2],
            "shop cancel": [200, {"count": 1}],
            "tables": [],
        }


def run_the_testing_page(python: Path, project: Path, env: dict[str, str]) -> str:
    """docs/testing.md's pytest set-up and its example test, as written: the packages its bash
    block installs, its pyproject.toml block, its `shop/test_order_email.py`, then
    `python -m pytest` from the folder of manage.py."""
    page = TESTING_GUIDE.read_text()
    (install,) = [b for b in re.findall(r"```bash\n(.*?)```", page, re.DOTALL) if "pip" in b]
    packages = install.split("pip install", 1)[1].split()
    run([str(python), "-m", "pip", "install", "-q", *packages])
    (config,) = re.findall(r"```toml\n(.*?)```", page, flags=re.DOTALL)
    (project / "pyproject.toml").write_text(config)
    (example,) = [
        block
        for block in re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
        if block.startswith("# shop/test_order_email.py")
    ]
    (project / "shop" / "test_order_email.py").write_text(example)
    return run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project, env=env)


def test_the_guide_shows_the_host_project_the_test_builds() -> None:
    """Each file of the template is a ```python block of the guides, headed by its path."""
    shown = {}
    guides = GUIDE.read_text() + TESTING_GUIDE.read_text()
    for block in re.findall(r"```python\n(.*?)```", guides, flags=re.DOTALL):
        heading, _, body = block.partition("\n")
        if heading.startswith("# "):
            shown[heading.removeprefix("# ")] = body
    files = {
        str(path.relative_to(TEMPLATE)): path.read_text()
        for path in TEMPLATE.rglob("*.py")
        if path.read_text()
    }
    files["host/settings.py, at the end"] = (
        TEMPLATE / "host" / "settings_additions.txt"
    ).read_text()
    for name, text in files.items():
        assert shown.get(name) == text, f"the guides do not show {name} as the test writes it"


# Run in the host (manage.py shell): the admin and the REST API as a superuser sees them.
WEB_CHECKS = """
import json
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import setup_test_environment
from django.utils import timezone

from shop.models import Order, ScheduledOrderEmail

setup_test_environment()  # the test client's host name, "testserver", is allowed
client = Client()
client.force_login(User.objects.create_superuser("root", "root@example.com", "unused"))
answers = {}
changelist = client.get("/admin/shop/scheduledorderemail/")
answers["changelist"] = changelist.status_code
answers["actions"] = sorted(
    name for name, _ in changelist.context["action_form"].fields["action"].choices
    if name and name != "delete_selected"
)
root = client.get("/api/scheduling/", HTTP_ACCEPT="application/json")
answers["api root"] = [root.status_code, sorted(root.json())]
order = Order.objects.first()
ScheduledOrderEmail.objects.create(order=order, due_at=timezone.now() + timedelta(days=1))
listed = client.get("/api/scheduling/events/shop/scheduledorderemail/")
answers["shop list"] = [listed.status_code, listed.json()["count"]]
cancelled = client.post(
    "/api/scheduling/events/shop/scheduledorderemail/cancel/",
    {"filter": {"order": order.pk}, "reason": "test"},
    content_type="application/json",
)
answers["shop cancel"] = [cancelled.status_code, cancelled.json()]
with connection.cursor() as cursor:
    cursor.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_name IN "
        "('recurring_schedule', 'scheduled_occurrence', 'scheduling_job', 'scheduled_job_run')"
    )
    answers["tables"] = [name for (name,) in cursor.fetchall()]
print(json.dumps(answers))
"""


def run(command: list[str], **kwargs: object) -> str:
    """Run to completion; its output, or a failure that shows it."""
    done = subprocess.run(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs
    )  # type: ignore[call-overload]
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}"
    return str(done.stdout)


def manager(python: Path, project: Path, env: dict[str, str]) -> Callable[..., str]:
    """The host project's `manage.py`, run to completion in its environment."""

    def manage(*args: str) -> str:
        return run([str(python), "manage.py", *args], cwd=project, env=env)

    return manage


def fresh_virtualenv(path: Path, wheel: Path) -> Path:
    """A new virtualenv with the wheel and the host's database driver (pip's cache makes
    reruns quick)."""
    run([sys.executable, "-m", "venv", str(path)])
    python = path / "bin" / "python"
    run([str(python), "-m", "pip", "install", "-q", str(wheel), "psycopg[binary]"])
    return python


def write_host_project(python: Path, project: Path) -> None:
    """`django-admin startproject host` and `startapp shop`, then the template: its Python
    files added or replacing startproject's, its settings additions appended to settings.py."""
    project.mkdir()
    django_admin = str(python.parent / "django-admin")
    run([django_admin, "startproject", "host", str(project)])
    run([django_admin, "startapp", "shop"], cwd=project)
    (project / "shop" / "admin.py").unlink()  # the host writes no admin code
    for source in TEMPLATE.rglob("*.py"):
        shutil.copyfile(source, project / source.relative_to(TEMPLATE))
    with open(project / "host" / "settings.py", "a") as settings_file:
        settings_file.write("\n" + (TEMPLATE / "host" / "settings_additions.txt").read_text())


@pytest.fixture(autouse=True)
def flush_redis_after() -> Iterator[None]:
    """The host uses this run's Redis pair (tests/settings.py), flushed before each test by
    conftest's clean_redis; flushed after as well, so no host key outlives the test."""
    yield
    for url in (settings.REDIS_URL, settings.CELERY_BROKER_URL):
        redis.Redis.from_url(url).flushdb()


@contextmanager
def scratch_database() -> Iterator[dict[str, str]]:
    """A PostgreSQL database of the host's own, on the test database's server, dropped after."""
    db = settings.DATABASES["default"]
    params = {
        "host": str(db["HOST"] or "127.0.0.1"),
        "port": str(db["PORT"] or 5432),
        "user": str(db["USER"] or "postgres"),
        "password": str(db["PASSWORD"] or ""),
    }
    name = f"scheduling_host_test_{os.environ['TEST_REDIS_PAIR']}"

    def execute(sql: str) -> None:
        with psycopg.connect(make_conninfo(dbname="postgres", **params), autocommit=True) as conn:
            conn.execute(sql.encode())

    execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    execute(f'CREATE DATABASE "{name}"')
    try:
        yield {"name": name, **params}
    finally:
        execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def host_environment(database: dict[str, str], effects: Path) -> dict[str, str]:
    """The host's processes see none of this test run's Django or Celery settings."""
    inherited = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DJANGO_SETTINGS_MODULE", "PYTHONPATH", "VIRTUAL_ENV", "DATABASE_URL"}
        and not key.startswith(("SCHEDULING_", "CELERY_", "REDIS_"))
    }
    return {
        **inherited,
        "DATABASE_NAME": database["name"],
        "DATABASE_HOST": database["host"],
        "DATABASE_PORT": database["port"],
        "DATABASE_USER": database["user"],
        "DATABASE_PASSWORD": database["password"],
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "SHOP_EFFECTS_FILE": str(effects),
    }


def start_worker(
    python: Path, project: Path, env: dict[str, str], log: Path, schedule: Path
) -> subprocess.Popen[bytes]:
    """A stock worker with beat embedded: no -Q, prefork, one child; a process group of its
    own, so stopping it leaves nothing behind."""
    command = [str(python), "-m", "celery", "-A", "host", "worker", "-B", "-l", "info"]
    command += ["--concurrency", "1", "-s", str(schedule)]
    with open(log, "wb") as output:
        return subprocess.Popen(
            command,
            cwd=project,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()  # warm shutdown
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=20)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # whatever of the group is left
    process.wait()
