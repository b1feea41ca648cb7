"""The processes of `.ci/Procfile` as `.ci/up` starts them (project settings, honcho's shell, a
process group each), on the test's databases and Redis."""

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import ROOT, stop_process
from tests.ops.test_up_processes import up_environment

SERVICES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")


def procfile_line(name: str) -> str:
    lines = (ROOT / ".ci" / "Procfile").read_text().splitlines()
    return next(line.split(":", 1)[1].strip() for line in lines if line.startswith(f"{name}:"))


def process_env(subprocess_env: dict[str, str], **settings: str) -> dict[str, str]:
    """`.ci/up`'s environment, pointed at the test's databases and Redis, plus `settings`."""
    return {
        **up_environment(**{name: settings.pop(name) for name in ["PORT"] if name in settings}),
        **{name: subprocess_env[name] for name in SERVICES},
        "DJANGO_SETTINGS_MODULE": "project.settings",
        **settings,
    }


@contextmanager
def procfile_process(name: str, env: dict[str, str], log_path: Path) -> Iterator[None]:
    """The Procfile's `name` line, running until the block ends."""
    log = log_path.open("w")
    process = subprocess.Popen(
        ["/bin/sh", "-c", procfile_line(name)],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    try:
        yield
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        stop_process(process)
        log.close()
