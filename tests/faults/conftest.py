"""Fixtures for the fault suite: sizes, the report, dedicated servers to break, row helpers.

Never stop the shared PostgreSQL or Redis: other test runs use them. A scenario that takes a
service down starts its own redis-server or PostgreSQL cluster on a free port.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis

from tests.conftest import ROOT, wait_for
from tests.faults.checker import Verdict

LABEL = "testapp.ScheduledPing"
QUEUE = "testapp"
REPORT = ROOT / ".run" / "faults-report.txt"
PG_BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))


def scale() -> int:
    """Rows per scenario; CI's default fits its time, FAULTS_SCALE=100000 is the full run."""
    return int(os.environ.get("FAULTS_SCALE", "20000"))


TABLE = "scheduled_ping"  # LABEL's table; a test over another model passes its own


def event_id(pk: int, version: int = 1, label: str = LABEL) -> str:
    return f"{label.lower()}:{pk}:v{version}"


@pytest.fixture
def fault_report(request: pytest.FixtureRequest) -> Callable[..., None]:
    """Prints a scenario's figures and appends them to .run/faults-report.txt."""

    def record(verdict: Verdict | None = None, **figures: Any) -> None:
        parts = [verdict.summary()] if verdict else []
        parts += [f"{name}={_figure(value)}" for name, value in figures.items()]
        line = f"{request.node.nodeid}: {' '.join(parts)}"
        print(f"\nFAULTS {line}")
        REPORT.parent.mkdir(exist_ok=True)
        with REPORT.open("a") as report:
            report.write(line + "\n")

    return record


def _figure(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


# --- rows -------------------------------------------------------------------------------------

INSERT_PINGS = """
WITH pings AS (
    INSERT INTO testapp_ping (name, "group")
    SELECT %(name)s, 'faults' FROM generate_series(1, %(count)s)
    RETURNING id
)
INSERT INTO {table}
    (ping_id, due_at, status, version, attempts, cancel_reason, last_error, created_at, updated_at)
SELECT id, {due}, 'pending', 1, 0, '', '', now(), now() FROM pings
RETURNING id
"""


# What a `sweep --loop` daemon logs when the database fails under it: the tick's read of the
# delivery pauses, or a sweep, whichever meets the failure first.
DAEMON_MET_FAILURE = ("sweep of testapp.ScheduledPing failed", "reading the delivery pauses failed")


def failures_met(output: str) -> int:
    return sum(output.count(line) for line in DAEMON_MET_FAILURE)


def insert_pings(
    cursor: Any,
    count: int,
    *,
    due: str = "now() - interval '5 minutes'",
    name: str = "fault",
    table: str = TABLE,
) -> list[int]:
    """Inserts `count` pending rows in one statement; `due` is SQL (the database's clock)."""
    cursor.execute(INSERT_PINGS.format(due=due, table=table), {"name": name, "count": count})
    return sorted(row[0] for row in cursor.fetchall())


def spread_due(seconds: float, count: int) -> str:
    """SQL for due times spread evenly over the next `seconds` by the database's clock."""
    step = seconds / count
    return f"statement_timestamp() + (row_number() OVER () * interval '{step} seconds')"


def fallen_due(cursor: Any, table: str = TABLE, label: str = LABEL) -> set[str]:
    cursor.execute(f"SELECT id, version FROM {table} WHERE due_at <= statement_timestamp()")
    return {event_id(pk, version, label) for pk, version in cursor.fetchall()}


def statuses(cursor: Any, table: str = TABLE) -> dict[str, int]:
    cursor.execute(f"SELECT status, count(*) FROM {table} GROUP BY status")
    return dict(cursor.fetchall())


def published_ids(client: redis.Redis, queue: str = QUEUE) -> list[str]:
    """Task ids (event ids) of every message on a Redis queue, in publishing order."""
    return [orjson.loads(raw)["headers"]["id"] for raw in reversed(client.lrange(queue, 0, -1))]


def backend_in_transaction(cursor: Any, application_name: str) -> int | None:
    """The pid of a backend of `application_name` that has a transaction open, if any."""
    cursor.execute(
        "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND xact_start IS NOT NULL"
        " AND backend_type = 'client backend' AND datname = current_database()",
        [application_name],
    )
    row = cursor.fetchone()
    return row[0] if row else None


# --- processes --------------------------------------------------------------------------------


def sweeper(
    env: dict[str, str], *args: str, prefix: tuple[str, ...] = (), label: str = LABEL
) -> subprocess.Popen[str]:
    command = [*prefix, sys.executable, str(ROOT / "manage.py"), "sweep", label, *args]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


@dataclass
class Tail:
    """Reads a process's output in a thread, keeping each line with the time it arrived."""

    process: subprocess.Popen[str]
    lines: list[tuple[float, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    @property
    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def finish(self, timeout: float = 60) -> str:
        self.process.wait(timeout=timeout)
        self.thread.join(timeout=10)
        return self.text


def end(process: subprocess.Popen[Any], sig: int = signal.SIGTERM, timeout: float = 30) -> None:
    """Stops a process we started; never leaves it running (or stopped) behind."""
    if process.poll() is not None:
        return
    try:
        process.send_signal(signal.SIGCONT)
        process.send_signal(sig)
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# Celery's worker log: "Task <name>[<task id>] received", "... succeeded in 0.01s: 'handled'".
TASK_LINE = re.compile(r"Task [\w.]+\[([^\]]+)\] (received|succeeded in \S+ '(\w+)')")


def worker_log(name: str) -> str:
    """A start_worker log name of this test run's own (runs may share the machine)."""
    return f"{name}-{os.environ['TEST_REDIS_PAIR']}"


def worker_saw(log_name: str, what: str = "received") -> list[str]:
    """Task ids (event ids) in a start_worker log: the messages it received, or the tasks that
    returned `what` ("handled", "skipped"), in the order it logged them."""
    path = ROOT / ".run" / f"{log_name}.log"
    text = path.read_text() if path.exists() else ""
    return [match[1] for match in TASK_LINE.finditer(text) if what in (match[2], match[3])]


def worker_ready(log_name: str) -> bool:
    path = ROOT / ".run" / f"{log_name}.log"
    return path.exists() and " ready." in path.read_text()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- a dedicated redis-server -----------------------------------------------------------------


class ServerProcess:
    """A server run as a child process, to freeze (SIGSTOP), thaw and clean up after a test."""

    process: subprocess.Popen[bytes] | None = None

    def freeze(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def cleanup(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait()


class RedisServer(ServerProcess):
    """A throwaway redis-server on its own port and directory, to stop, freeze and restart.

    It saves its data on SHUTDOWN SAVE and loads it on start, like a broker with persistence,
    so messages published before an outage are still there to check afterwards.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--appendonly", "no", "--dir", str(self.directory)]
        log = open(self.directory / "redis.log", "ab")  # noqa: SIM115 (the child keeps it)
        self.process = subprocess.Popen(command, stdout=log, stderr=log)
        log.close()
        wait_for(self._answers, timeout=30, interval=0.05)

    def _answers(self) -> bool:
        try:
            return bool(self.client().ping())
        except redis.RedisError:
            return False

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_timeout=5, socket_connect_timeout=5)

    def stop(self, *, save: bool) -> None:
        assert self.process is not None
        with contextlib.suppress(redis.ConnectionError):  # it closes the connection as it exits
            self.client().shutdown(save=save, nosave=not save)
        self.process.wait(timeout=60)


@pytest.fixture
def dedicated_redis() -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        pytest.fail(
            "redis-server is required for the fault suite (install the redis-server package)"
        )
    directory = Path(tempfile.mkdtemp(prefix="faults-redis-"))
    server = RedisServer(directory)
    server.start()
    try:
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(directory, ignore_errors=True)


# --- a dedicated PostgreSQL cluster -----------------------------------------------------------


class PostgresCluster:
    """A throwaway cluster (initdb into a temporary directory) that a test may restart."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.data = directory / "data"
        self.port = free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/faults"

    def run(self, *command: str) -> None:
        # initdb and pg_ctl refuse to run as root: run them as the postgres user then.
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
        self.run(str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust")
        self.run(*self.pg_ctl("start"))

    def pg_ctl(self, action: str, *extra: str) -> list[str]:
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.directory / "postgres.log")
        return [
            str(PG_BIN / "pg_ctl"),
            action,
            "-D",
            str(self.data),
            "-w",
            "-l",
            log,
            "-o",
            options,
            *extra,
        ]

    def restart(self, mode: str) -> None:
        self.run(*self.pg_ctl("restart", "-m", mode))

    def stop(self) -> None:
        self.run(*self.pg_ctl("stop", "-m", "immediate"))


@pytest.fixture
def dedicated_postgres() -> Iterator[PostgresCluster]:
    if not (PG_BIN / "initdb").exists():
        pytest.fail(f"PostgreSQL server binaries are required in {PG_BIN} (set PG_BIN)")
    directory = Path(tempfile.mkdtemp(prefix="faults-pg-"))
    cluster = PostgresCluster(directory)
    try:
        cluster.init()
        yield cluster
    finally:
        # It may never have started, or be stopped already.
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)
