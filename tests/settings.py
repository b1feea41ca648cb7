"""Test settings: the project's, plus a test-only scheduled model.

Several test runs may share one machine (developers, CI), so each run gets its own test
database and its own pair of Redis databases (the tests flush them). Child processes that
the tests start receive the run's choices through the environment. Each pytest-xdist worker
is a run of its own: it claims its own pair, and so its own database.

The unit tier (tests/unit) needs neither service: where Redis does not answer, no pair is
claimed and the Redis URLs point nowhere, and tests/conftest.py fails any test that needs Redis
with a message saying so.
"""

import os

import redis

REDIS_BASE = os.environ.get("TEST_REDIS_BASE_URL", "redis://127.0.0.1:6379")
FIRST_TEST_DB, LAST_TEST_DB = 2, 15
# Redis URLs for a run that could claim no pair: nothing listens on port 1.
NO_REDIS = "redis://127.0.0.1:1/0"
UNCLAIMED = "none"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def _claims() -> redis.Redis:
    return redis.Redis.from_url(f"{REDIS_BASE}/0", socket_connect_timeout=2)


def _claim_redis_pair() -> int | None:
    """SET NX in database 0 claims a pair for this process; a dead owner's claim is taken over.
    None where Redis does not answer."""
    client = _claims()
    try:
        client.ping()
    except redis.ConnectionError:
        return None
    for first in range(FIRST_TEST_DB, LAST_TEST_DB, 2):
        key = f"scheduling-tests:redis-pair:{first}"
        if client.set(key, os.getpid(), nx=True, ex=6 * 3600):
            return first
        owner = client.get(key)
        if owner is not None and not _alive(int(owner)):
            client.set(key, os.getpid(), ex=6 * 3600)
            return first
    raise RuntimeError("every Redis database pair for tests is claimed by a running test session")


def release_redis_pair() -> None:
    if os.environ["TEST_REDIS_PAIR"] == UNCLAIMED:
        return
    first = int(os.environ["TEST_REDIS_PAIR"])
    client = _claims()
    key = f"scheduling-tests:redis-pair:{first}"
    if client.get(key) == str(os.getpid()).encode():
        client.delete(key)


def redis_pair_claimed() -> bool:
    return os.environ["TEST_REDIS_PAIR"] != UNCLAIMED


def _claim_for_this_run() -> None:
    """A pair for this process, unless it was handed one: a child process the tests start gets
    its run's pair through the environment. An xdist worker inherits its controller's
    environment, so a pair counts as handed down only if it was claimed for the same worker."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if "TEST_REDIS_PAIR" in os.environ and os.environ.get("TEST_REDIS_PAIR_WORKER", "") == worker:
        return
    inherited = {
        name: os.environ.pop(name)
        for name in ("TEST_REDIS_PAIR", "TEST_REDIS_PAIR_WORKER")
        if name in os.environ
    }
    if inherited.get("TEST_REDIS_PAIR", UNCLAIMED) != UNCLAIMED:  # the controller's URLs
        os.environ.pop("REDIS_URL", None)
        os.environ.pop("CELERY_BROKER_URL", None)
    pair = _claim_redis_pair()
    os.environ["TEST_REDIS_PAIR"] = UNCLAIMED if pair is None else str(pair)
    os.environ["TEST_REDIS_PAIR_WORKER"] = worker
    os.environ.setdefault("REDIS_URL", NO_REDIS if pair is None else f"{REDIS_BASE}/{pair}")
    os.environ.setdefault(
        "CELERY_BROKER_URL", NO_REDIS if pair is None else f"{REDIS_BASE}/{pair + 1}"
    )


_claim_for_this_run()
os.environ.setdefault("EMAIL_BACKEND", "django.core.mail.backends.locmem.EmailBackend")

from project.databases import database_config  # noqa: E402
from project.settings import *  # noqa: E402,F403
from project.settings import DATABASES, INSTALLED_APPS  # noqa: E402

INSTALLED_APPS = [*INSTALLED_APPS, "tests.testapp"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
DATABASES["default"]["TEST"] = {
    "NAME": os.environ.get("TEST_DATABASE_NAME", f"test_scheduling_{os.environ['TEST_REDIS_PAIR']}")
}

# A domain on a database of its own (docs/databases.md): tests.remoteapp on "second", a second
# PostgreSQL cluster that .ci/setup starts (ensure_second_postgres). Child processes get the
# test database's URL in SECOND_DATABASE_URL (tests/conftest.py, subprocess_env); one that
# assumes every scheduled table is on one database (the release bench truncates them all
# there) is started with TEST_ONE_DATABASE=1, without it.
if not os.environ.get("TEST_ONE_DATABASE"):
    INSTALLED_APPS.append("tests.remoteapp")
    SECOND_DATABASE_URL = os.environ.get(
        "SECOND_DATABASE_URL",
        f"postgres://postgres@127.0.0.1:{os.environ.get('SECOND_POSTGRES_PORT', '5433')}/scheduling",
    )
    DATABASES["second"] = database_config(
        "SECOND_DATABASE_URL", SECOND_DATABASE_URL, conn_max_age=60, conn_health_checks=True
    )
    DATABASES["second"]["TEST"] = {
        "NAME": f"test_scheduling_second_{os.environ['TEST_REDIS_PAIR']}"
    }
    # After the read-replica router, which the demo settings put first when a child process
    # is given DATABASE_REPLICA_URL (tests/faults/test_read_replicas.py).
    DATABASE_ROUTERS = [
        *globals().get("DATABASE_ROUTERS", []),
        "scheduling.rows.routers.AppDatabaseRouter",
    ]
    SCHEDULING_DATABASES = {"remoteapp": "second"}

# The fault suite kills a worker mid-task: Redis hands its unacked message to another worker
# once this visibility timeout passes (the transport's default is an hour), checked every second
# (by default every 10 s, and only on every 10th check).
if "TEST_VISIBILITY_TIMEOUT" in os.environ:
    from project.settings import CELERY_BROKER_TRANSPORT_OPTIONS

    CELERY_BROKER_TRANSPORT_OPTIONS = {
        **CELERY_BROKER_TRANSPORT_OPTIONS,
        "visibility_timeout": float(os.environ["TEST_VISIBILITY_TIMEOUT"]),
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": 1,
    }

# --- Read replicas (tests/scheduling/rows/test_replicas.py) -------------------------------------
# A "replica" alias that is a test mirror of default: same test database, its own connection.
# Nothing reads from it unless a test enables the router and middleware (replica_reads there).
# A child process given DATABASE_REPLICA_URL (tests/faults/test_read_replicas.py) keeps that.
DATABASES.setdefault("replica", {**DATABASES["default"], "TEST": {"MIRROR": "default"}})

# Django's task framework on the SchedulingBackend (docs/django-tasks.md), with a second queue
# besides the default one for tests/scheduling/jobs/test_django_tasks.py.
TASKS = {
    "default": {
        "BACKEND": "scheduling.jobs.backends.SchedulingBackend",
        "QUEUES": ["default", "emails"],
    }
}
