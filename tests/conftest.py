"""Fixtures and helpers shared by the tiers; the tiers and markers are set here, by folder and
by fixture, so no test has to declare them (docs/running.md, "The tests").

- unit (tests/unit): no service; the Redis flush below leaves these tests alone.
- integration (the rest of tests/ but tests/faults): PostgreSQL and Redis.
- faults (tests/faults): breaks servers of its own, with libfaketime.
- browser, rabbitmq, node, slow, fuzz: what else a test needs, that it spawns several processes,
  or that it sends generated requests by the thousand (the fast loop, `.ci/fast`, leaves them out).
"""

import base64
import functools
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
import time_machine
from _pytest.mark.expression import Expression
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.db import connection, connections
from rest_framework.test import APIClient

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
TIER_FOLDERS = {"unit": TESTS / "unit", "faults": TESTS / "faults"}
# A test that asks for one of these fixtures gets the marker: what it needs besides the tier's.
MARKER_FIXTURES = {
    "browser": {"chromium_path"},
    "rabbitmq": {"rabbitmq", "rabbitmq_app", "quorum_vhost"},
    "node": {"node_consumer"},
}

# Paths whose every test carries a marker. When `-m` can select none of them, they are not even
# imported: test_fuzz.py builds its ~12,000 cases from the OpenAPI schema as it is collected (10 s
# a process, paid by each xdist worker of the fast loop).
WHOLE_PATH_MARKERS = {TESTS / "faults": "faults", TESTS / "security" / "test_fuzz.py": "fuzz"}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    expression = config.getoption("markexpr")
    for path, marker in WHOLE_PATH_MARKERS.items():
        if expression and collection_path.is_relative_to(path):
            return None if selectable(expression, marker) else True
    return None


def selectable(expression: str, marker: str) -> bool:
    """Whether a test carrying `marker` can match `-m expression`, whatever other markers it has:
    every name the expression mentions is tried present and absent."""
    compiled = Expression.compile(expression)
    others = sorted(set(re.findall(r"[\w.]+", expression)) - {marker, "and", "or", "not"})
    for presence in itertools.product((False, True), repeat=len(others)):
        present = {marker, *itertools.compress(others, presence)}
        if compiled.evaluate(carrying(present)):
            return True
    return False


def carrying(markers: set[str]) -> Callable[..., bool]:
    """A `-m` matcher for a test that carries these markers (and whatever their arguments)."""
    return lambda name, /, **_: name in markers


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(tier_of(item))
        reach_every_database(item)
        fixtures = fixtures_of(item)
        for marker, needs in MARKER_FIXTURES.items():
            if fixtures & needs:
                item.add_marker(marker)


def reach_every_database(item: pytest.Item) -> None:
    """A test that uses the database may use each alias: the framework's loops over every
    scheduled model (run_due(), the purge, the metrics, the dashboard) reach tests.remoteapp's,
    which lives on "second" (tests/settings.py). A test naming its own `databases` keeps them."""
    marker = item.get_closest_marker("django_db")
    if marker is None and not fixtures_of(item) & {"db", "transactional_db", "live_server"}:
        return
    kwargs = dict(marker.kwargs) if marker is not None else {}
    if "databases" in kwargs or hasattr(getattr(item, "cls", None), "databases"):
        return
    args = marker.args if marker is not None else ()
    item.add_marker(pytest.mark.django_db(*args, databases="__all__", **kwargs), append=False)


def fixtures_of(item: pytest.Item) -> set[str]:
    """The fixtures a test asks for, less the names its parametrize fills in."""
    callspec = getattr(item, "callspec", None)
    return set(getattr(item, "fixturenames", ())) - set(callspec.params if callspec else ())


def tier_of(item: pytest.Item) -> str:
    for tier, folder in TIER_FOLDERS.items():
        if item.path.is_relative_to(folder):
            return tier
    return "integration"


# .ci/dj61: a deprecation warning raised in the framework's own modules fails the test. Only
# those: a warning Django or a library raises about its own code is theirs to fix.
OWN_DEPRECATIONS = [
    rf"error::{kind}:scheduling(\..*)?$"
    for kind in ("DeprecationWarning", "PendingDeprecationWarning")
]


def pytest_configure(config: pytest.Config) -> None:
    from tests.settings import release_redis_pair

    if os.environ.get("TEST_DEPRECATIONS_AS_ERRORS"):
        for line in OWN_DEPRECATIONS:
            config.addinivalue_line("filterwarnings", line)

    if getattr(config.option, "numprocesses", None) and "PYTEST_XDIST_WORKER" not in os.environ:
        release_redis_pair()  # an xdist controller runs no test: its workers claim their own


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from tests.settings import release_redis_pair

    release_redis_pair()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> None:
    """Once the test databases exist: what migrate left in them, which the test settings' flush
    keeps (tests/testapp/management/commands/flush.py)."""
    from tests.testapp.management.commands.flush import remember_migrated_rows

    with django_db_blocker.unblock():
        remember_migrated_rows()


@pytest.fixture(autouse=True)
def clean_redis(request: pytest.FixtureRequest) -> None:
    """Each test starts with empty lock and broker databases (test-only Redis databases); the
    unit tier has none."""
    from tests.settings import redis_pair_claimed

    if request.node.get_closest_marker("unit"):
        return
    if not redis_pair_claimed():
        pytest.fail(f"Redis did not answer at {settings.REDIS_URL} when the session started")
    from scheduling.delivery.metrics import flush_counts

    flush_counts()  # the last test's buffered counts go before the flush, not into this test
    for url in (settings.REDIS_URL, settings.CELERY_BROKER_URL):
        try:
            redis_at(url).flushdb()
        except redis.ConnectionError:  # the server restarted since the client connected
            redis_at(url).flushdb()


@functools.cache
def redis_at(url: str) -> redis.Redis:
    """One client a URL for the session: a new one would connect (and introduce itself) before
    every test, 3 ms where the flush takes 0.1."""
    return redis.Redis.from_url(url)


@pytest.fixture
def spans() -> Iterator[Any]:
    """A tracing SDK for this test, its finished spans kept in memory (an InMemorySpanExporter).
    The global provider is unset after, as OpenTelemetry's own test utilities do: the next test
    runs without an SDK again."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.util._once import Once

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    yield exporter
    provider.shutdown()
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


@pytest.fixture(params=["plain", "partitioned"])
def ping_model(request: pytest.FixtureRequest) -> type[Any]:
    """The test domain's scheduled model, as a plain table and range-partitioned on due_at: the
    framework's tests run over both."""
    from tests.testapp.models import ScheduledPing, ScheduledPingPartitioned

    return {"plain": ScheduledPing, "partitioned": ScheduledPingPartitioned}[request.param]


@pytest.fixture
def ping_factory(ping_model: type[Any]) -> Any:
    """The factory of `ping_model`'s rows."""
    from tests.factories import factory_for

    return factory_for(ping_model)


@pytest.fixture
def broker() -> redis.Redis:
    return redis.Redis.from_url(settings.CELERY_BROKER_URL)


def queued_messages(client: redis.Redis, queue: str) -> list[dict[str, Any]]:
    """The Celery messages waiting on a Redis queue, oldest first."""
    return [json.loads(raw) for raw in reversed(client.lrange(queue, 0, -1))]


def message_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The events a Celery message of the sweep's carries: a batch message's, or its one."""
    _, kwargs, _ = json.loads(base64.b64decode(message["body"]))
    return kwargs["events"] if "events" in kwargs else [kwargs["event"]]


def queued_events(client: redis.Redis, queue: str) -> list[dict[str, Any]]:
    """Every event waiting on a Redis queue, batch messages' included, oldest first."""
    return [
        event for message in queued_messages(client, queue) for event in message_events(message)
    ]


def queued_task_ids(client: redis.Redis, queue: str) -> list[str]:
    return [message["headers"]["id"] for message in queued_messages(client, queue)]


@pytest.fixture
def subprocess_env(transactional_db: None) -> dict[str, str]:
    """Environment for child processes: same test database, same Redis databases."""
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "PYTHONPATH": str(ROOT),
    }
    if "second" in settings.DATABASES:  # tests.remoteapp's database (tests/settings.py)
        second = connections["second"].settings_dict
        env["SECOND_DATABASE_URL"] = (
            f"postgres://{second['USER']}@{second['HOST']}:{second['PORT']}/{second['NAME']}"
        )
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def start_django(**variables: str) -> subprocess.CompletedProcess[str]:
    """Set the project up in a fresh process whose environment holds only `variables`."""
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "project.settings", **variables}
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def check_django(**variables: str) -> subprocess.CompletedProcess[str]:
    """`manage.py check` in a fresh process whose environment holds only `variables`."""
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "project.settings", **variables}
    command = [sys.executable, str(ROOT / "manage.py"), "check"]
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)


def start_worker(env: dict[str, str], queues: str | None, log_name: str) -> subprocess.Popen[bytes]:
    """A real Celery worker process (solo pool) consuming `queues` (None: no -Q, as a plain
    `celery -A project worker`); its log goes to .run/."""
    log_path = ROOT / ".run" / f"{log_name}.log"
    log_path.parent.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "celery", "-A", "project", "worker"]
    command += ["-Q", queues] if queues else []
    command += ["-P", "solo", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    with open(log_path, "w") as log:
        return subprocess.Popen([*command, "-l", "info"], env=env, cwd=ROOT, stdout=log, stderr=log)


def start_beat(env: dict[str, str], state: Path, log_name: str) -> subprocess.Popen[bytes]:
    """Real Celery beat (its schedule state in `state`); its log goes to .run/."""
    log_path = ROOT / ".run" / f"{log_name}.log"
    log_path.parent.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "celery", "-A", "project", "beat", "-s", str(state)]
    with open(log_path, "w") as log:
        return subprocess.Popen([*command, "-l", "info"], env=env, cwd=ROOT, stdout=log, stderr=log)


def stop_process(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture
def celery_worker_process(subprocess_env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """A real Celery worker consuming the test domain's queue."""
    process = start_worker(subprocess_env, "testapp", "test-worker")
    yield process
    stop_process(process)


def wait_for(condition: Any, timeout: float = 60.0, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


# A cache (and so a lock store) nobody listens for: connection refused at once.
UNREACHABLE_REDIS_CACHE = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": "redis://127.0.0.1:1/0",
        "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 0.5, "SOCKET_TIMEOUT": 0.5},
    }
}

CURRENT_TIME = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


@pytest.fixture
def chromium_path() -> str:
    """The browser tests drive Debian's Chromium, headless (`.ci/setup` installs it)."""
    path = shutil.which("chromium")
    assert path, "this test drives Debian's Chromium: apt-get install -y chromium"
    return path


def admin_browser_page(playwright: Any, chromium_path: str, server_url: str) -> tuple[Any, Any]:
    """(browser, page), the page signed in to the admin as pytest-django's `admin_user`."""
    browser = playwright.chromium.launch(executable_path=chromium_path, args=["--no-sandbox"])
    page = browser.new_page()
    page.goto(f"{server_url}/admin/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "password")
    page.click("input[type=submit]")
    return browser, page


@pytest.fixture
def frozen_clock() -> Iterator[time_machine.Traveller]:
    """The clock stopped at CURRENT_TIME."""
    with time_machine.travel(CURRENT_TIME, tick=False) as traveller:
        yield traveller


def delivered_by(output: str) -> int:
    """Rows a sweeper's output says it delivered, over all its `delivered=N` lines."""
    return sum(int(n) for n in re.findall(r"delivered=(\d+)", output))


def users_of(app_label: str) -> Callable[..., User]:
    """`user_with(username, *codenames)`: a user holding those permissions of one app."""

    def user_with(username: str, *codenames: str) -> User:
        user = User.objects.create_user(username, password="pw")
        user.user_permissions.set(
            Permission.objects.filter(content_type__app_label=app_label, codename__in=codenames)
        )
        return user

    return user_with


def client_for(user: User | None) -> APIClient:
    """An API client authenticated as `user` (anonymous for None)."""
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def api_user(admin_user: User) -> User:
    """Whom `api` acts for: a superuser unless a folder or module overrides this fixture."""
    return admin_user


@pytest.fixture
def api(api_user: User) -> APIClient:
    return client_for(api_user)
