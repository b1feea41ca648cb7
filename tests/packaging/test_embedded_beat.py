"""The host guide's `celery -A host worker -B -l info` on Python 3.13 (docs/adding-scheduling.md,
"Run"): its embedded beat starts and sends its first sweep in each of fifty fresh starts, and a
worker whose embedded beat dies exits non-zero.

On Python 3.13 Celery's schedule file is an SQLite database (dbm.sqlite3). The embedded beat
process, right after the fork, closes the descriptors it inherited but not the Python objects
that own them; one of those, finalised later, closed a number SQLite had reused for the schedule
file, and beat died with "locking protocol" while the worker went on (3 crashes in 21 starts).
The framework now gives beat a scheduler that keeps its sweep entries in memory.

The host is test_wheel's (tests/packaging/host/), run by the Django 6.1 / Python 3.13
virtualenv that `.ci/setup`'s ensure_venv_dj61 builds (.venv-dj61, the working tree installed
in it), or, without one, by a virtualenv made from the wheel.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from queue import Queue

import pytest

from tests.packaging.test_django6_host import django_61_virtualenv
from tests.packaging.test_wheel import (
    ROOT,
    host_environment,
    manager,
    scratch_database,
    stop,
    write_host_project,
)

STARTS = 50
AT_ONCE = 5  # starts running together: fifty in a few minutes on two cores
GUIDE_COMMAND = ["-m", "celery", "-A", "host", "worker", "-B", "-l", "info"]
FIRST_SWEEP = "Sending due task sweep shop.ScheduledOrderEmail slot 0"
BEAT_PROCESS = re.compile(r"embedded beat runs in process (\d+)")
SCHEDULE_FILES = "celerybeat-schedule*"


@dataclass
class Start:
    sent_first_sweep: bool
    exit_code: int | None  # None: still running when the first sweep was sent (or at timeout)
    log: str

    @property
    def crashed(self) -> bool:
        return self.exit_code is not None or "Traceback" in self.log


@pytest.fixture(scope="module")
def python313(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """.venv-dj61's Python (the working tree installed in it), else a virtualenv of the wheel."""
    prepared = ROOT / ".venv-dj61" / "bin" / "python"
    if prepared.exists():
        return prepared
    wheel = request.getfixturevalue("wheel")
    return django_61_virtualenv(tmp_path_factory.mktemp("venv313") / "venv", wheel)


@pytest.fixture(scope="module")
def host(python313: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The guide's host project, migrated on a database of its own; its environment."""
    project = tmp_path_factory.mktemp("host") / "hostproject"
    write_host_project(python313, project)
    effects = project.parent / "effects.txt"
    effects.touch()
    with scratch_database() as database:
        env = host_environment(database, effects)
        manage = manager(python313, project, env)
        manage("makemigrations", "shop")
        manage("migrate", "--no-input")
        yield {**env, "HOST_PROJECT": str(project)}


def copies_of(project: Path, count: int) -> Queue[Path]:
    """A directory per start running at once: the guide's command keeps its schedule file in
    the working directory (celerybeat-schedule)."""
    copies: Queue[Path] = Queue()
    for number in range(count):
        copy = project.parent / f"copy{number}"
        shutil.copytree(project, copy, ignore=shutil.ignore_patterns(SCHEDULE_FILES))
        copies.put(copy)
    return copies


def fresh_start(python: Path, project: Path, env: dict[str, str], *more: str) -> Start:
    """One start with no schedule file: until beat sends its first sweep (and a second more, in
    which a beat that died after it would show), the worker exits, or 90 s pass. The worker
    is then killed: its shutdown is not what is tested."""
    for old in project.glob(SCHEDULE_FILES):
        old.unlink()
    log = project / "worker.log"
    with open(log, "w") as output:
        worker = subprocess.Popen(
            [str(python), *GUIDE_COMMAND, *more],
            cwd=project,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        sent = wait_for_line(worker, log, FIRST_SWEEP, timeout=90)
        if sent:
            time.sleep(1)
        return Start(sent, worker.poll(), log.read_text())
    finally:
        with suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()


def wait_for_line(worker: subprocess.Popen[bytes], log: Path, line: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and worker.poll() is None:
        if line in log.read_text():
            return True
        time.sleep(0.2)
    return line in log.read_text()


@pytest.mark.slow
@pytest.mark.timeout(600)  # about three minutes on two idle cores; a loaded machine is slower
def test_fifty_fresh_starts_of_the_guides_worker_each_send_a_sweep(
    python313: Path, host: dict[str, str]
) -> None:
    copies = copies_of(Path(host["HOST_PROJECT"]), AT_ONCE)

    def one_start(_: int) -> Start:
        project = copies.get()
        try:
            return fresh_start(python313, project, host)
        finally:
            copies.put(project)

    with ThreadPoolExecutor(AT_ONCE) as pool:
        starts = list(pool.map(one_start, range(STARTS)))

    assert_every_beat_sent_its_first_sweep(starts)


def assert_every_beat_sent_its_first_sweep(starts: list[Start]) -> None:
    crashed = [start for start in starts if start.crashed]
    silent = [start for start in starts if not start.sent_first_sweep]
    summary = f"{len(crashed)} crashed, {len(silent)} sent no sweep, of {len(starts)} starts"
    print(summary)
    assert not crashed, f"{summary}; the first:\n{crashed[0].log}"
    assert not silent, f"{summary}; the first:\n{silent[0].log}"


# A host's worker_init receiver that queries the database in the worker's main process before
# beat forks, as hosts do (a warm-up, a check): the connection's socket then has a low number,
# which the embedded beat closes and SQLite reuses; Celery's Django fix-up closes the inherited
# connection at beat_embedded_init, closing SQLite's file under it (10 crashes in 10 starts on
# Celery's own scheduler: "disk I/O error" in PersistentScheduler.sync).
WARM_UP = """

from celery import signals
from django.db import connection


@signals.worker_init.connect
def warm_up(**kwargs):
    connection.ensure_connection()
"""


@pytest.mark.slow
def test_a_worker_that_used_the_database_before_beat_forked_keeps_its_beat(
    python313: Path, host: dict[str, str], tmp_path: Path
) -> None:
    project = tmp_path / "warmup"
    shutil.copytree(Path(host["HOST_PROJECT"]), project)
    with open(project / "host" / "celery.py", "a") as celery_module:
        celery_module.write(WARM_UP)

    starts = [fresh_start(python313, project, host) for _ in range(3)]

    assert_every_beat_sent_its_first_sweep(starts)


@pytest.mark.slow
def test_a_worker_whose_embedded_beat_dies_exits_non_zero(
    python313: Path, host: dict[str, str], tmp_path: Path
) -> None:
    project = Path(host["HOST_PROJECT"])
    log = tmp_path / "worker.log"
    with open(log, "w") as output:
        worker = subprocess.Popen(
            [str(python313), *GUIDE_COMMAND, "-s", str(tmp_path / "schedule")],
            cwd=project,
            env=host,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        assert wait_for_line(worker, log, FIRST_SWEEP, timeout=60), log.read_text()
        found = BEAT_PROCESS.search(log.read_text())
        assert found, log.read_text()
        os.kill(int(found.group(1)), signal.SIGKILL)
        code = worker.wait(timeout=30)
    finally:
        stop(worker)

    text = log.read_text()
    assert code != 0, text
    assert re.search(r"embedded beat \(process \d+\) died .*stopping the worker", text), text
