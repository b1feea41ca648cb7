"""Test settings: the project's, plus a test-only scheduled model.

Several test runs may share one machine (developers, CI), so each run gets its own test
database and its own pair of Redis databases (the tests flush them). Child processes that
the tests start receive the run's choices through the environment.
"""

import os

import redis

REDIS_BASE = os.environ.get("TEST_REDIS_BASE_URL", "redis://127.0.0.1:6379")
FIRST_TEST_DB, LAST_TEST_DB = 2, 15


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def _claim_redis_pair() -> int:
    """SET NX in database 0 claims a pair for this process; a dead owner's claim is taken over."""
    client = redis.Redis.from_url(f"{REDIS_BASE}/0")
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
    first = int(os.environ["TEST_REDIS_PAIR"])
    client = redis.Redis.from_url(f"{REDIS_BASE}/0")
    key = f"scheduling-tests:redis-pair:{first}"
    if client.get(key) == str(os.getpid()).encode():
        client.delete(key)


if "TEST_REDIS_PAIR" not in os.environ:
    _pair = _claim_redis_pair()
    os.environ["TEST_REDIS_PAIR"] = str(_pair)
    os.environ.setdefault("REDIS_URL", f"{REDIS_BASE}/{_pair}")
    os.environ.setdefault("CELERY_BROKER_URL", f"{REDIS_BASE}/{_pair + 1}")
os.environ.setdefault("EMAIL_BACKEND", "django.core.mail.backends.locmem.EmailBackend")

from project.settings import *  # noqa: E402,F403
from project.settings import DATABASES, INSTALLED_APPS  # noqa: E402

INSTALLED_APPS = [*INSTALLED_APPS, "tests.testapp"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
DATABASES["default"]["TEST"] = {
    "NAME": os.environ.get("TEST_DATABASE_NAME", f"test_scheduling_{os.environ['TEST_REDIS_PAIR']}")
}

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
