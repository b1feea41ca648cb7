import os
import subprocess
from collections.abc import Iterator
from email import message_from_string
from email.message import Message
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User

from tests.conftest import ROOT, start_worker, stop_process, users_of

user_with = users_of("purchases")


@pytest.fixture
def viewer(db) -> User:
    """May read everything in the store, change nothing."""
    return user_with(
        "viewer",
        *(f"view_{model}" for model in ("account", "artist", "release", "customer", "purchase")),
        "view_scheduledpurchase",
    )


@pytest.fixture
def clerk(db) -> User:
    """Runs the store: every permission on the purchases app."""
    user = User.objects.create_user("clerk", password="pw")
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="purchases"))
    return user


@pytest.fixture
def api_user(clerk) -> User:
    return clerk


@pytest.fixture
def mail_dir(tmp_path: Path) -> Path:
    path = tmp_path / "mail"
    path.mkdir()
    return path


@pytest.fixture
def purchases_worker(
    subprocess_env: dict[str, str], mail_dir: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """A real Celery worker on the purchases queue, writing emails to files in mail_dir."""
    env = {
        **subprocess_env,
        "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
        "EMAIL_FILE_PATH": str(mail_dir),
    }
    process = start_worker(env, "purchases", WORKER_LOG)
    yield process
    stop_process(process)


# Per test run: concurrent runs on one machine each have their own Redis pair, and log.
WORKER_LOG = f"purchases-worker-{os.environ['TEST_REDIS_PAIR']}"


def worker_log() -> str:
    return (ROOT / ".run" / f"{WORKER_LOG}.log").read_text()


def sent_emails(mail_dir: Path) -> list[Message]:
    """Every message the file-based email backend wrote (one file may hold several)."""
    separator = "-" * 79
    messages = []
    for path in sorted(mail_dir.glob("*.log")):
        for chunk in path.read_text().split(separator):
            if chunk.strip():
                messages.append(message_from_string(chunk.strip()))
    return messages
