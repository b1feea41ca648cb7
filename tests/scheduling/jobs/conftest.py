from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.conftest import users_of

NODE_DIR = Path(__file__).resolve().parent / "node"
JOB_PERMISSIONS = ("view_job", "add_job", "change_job", "delete_job")
JOBS = "/api/jobs/"


user_with = users_of("scheduling_jobs")


@pytest.fixture
def operator(db: None) -> User:
    return user_with("operator", *JOB_PERMISSIONS)


@pytest.fixture
def api_user(operator: User) -> User:
    return operator


@pytest.fixture
def node_consumer() -> Path:
    """The Node consumer script; its packages are installed by .ci/test (ensure_node_consumer)."""
    if not (NODE_DIR / "node_modules" / "amqplib").is_dir():
        pytest.fail(
            "tests/scheduling/jobs/node/node_modules is missing: run `npm ci --prefix tests/scheduling/jobs/node` "
            "(.ci/test does it) to install the Node consumer's amqplib"
        )
    return NODE_DIR / "consume.js"


def put_job(client: APIClient, key: str, **body: Any) -> Any:
    body.setdefault("schedules", ["2030-01-01T09:00:00Z"])
    body.setdefault("callback", {"type": "queue", "queue": "reminders"})
    return client.put(f"{JOBS}{key}/", body, format="json")
