"""A replicated PostgreSQL built on this machine: a primary and a synchronous streaming standby.

The primary is an initdb cluster on a free port; the standby a `pg_basebackup -R` copy of it,
on another free port, streaming under the application_name the primary lists in
synchronous_standby_names, so every commit waits for the standby to have its WAL. A test stops
the primary with `-m immediate` and promotes the standby, as Patroni would after its TTL.
Never the machine's own cluster: both live in a temporary directory and end with the test.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import ROOT, wait_for
from tests.faults.conftest import PG_BIN, PostgresCluster

STANDBY_NAME = "standby1"
DATABASE = "faults"


class ReplicatedPostgres:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.primary = PostgresCluster(directory / "primary")
        self.standby = PostgresCluster(directory / "standby")
        for cluster in (self.primary, self.standby):
            cluster.directory.mkdir()
            cluster.url = f"postgres://postgres@127.0.0.1:{cluster.port}/{DATABASE}"
            if os.geteuid() == 0:
                shutil.chown(cluster.directory, "postgres", "postgres")

    @property
    def url(self) -> str:
        """DATABASE_URL naming both servers (libpq's multi-host form): whichever accepts writes."""
        hosts = f"127.0.0.1:{self.primary.port},127.0.0.1:{self.standby.port}"
        return f"postgres://postgres@{hosts}/{DATABASE}?target_session_attrs=read-write"

    def start(self) -> None:
        primary = self.primary
        primary.run(
            str(PG_BIN / "initdb"), "-D", str(primary.data), "-U", "postgres", "-A", "trust"
        )
        # initdb's pg_hba.conf already lets local TCP connections replicate (trust).
        append(primary, f"synchronous_standby_names = '{STANDBY_NAME}'", "synchronous_commit = on")
        primary.run(*primary.pg_ctl("start"))
        standby = self.standby
        standby.run(
            str(PG_BIN / "pg_basebackup"),
            *("-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres"),
            *("-D", str(standby.data), "-R", "-X", "stream", "-c", "fast"),
        )
        source = f"host=127.0.0.1 port={primary.port} user=postgres"
        # The copy of the primary's configuration would make the standby, once promoted, wait
        # for a synchronous standby of its own that does not exist: every commit would hang.
        append(
            standby,
            f"primary_conninfo = '{source} application_name={STANDBY_NAME}'",
            "synchronous_standby_names = ''",
        )
        standby.run(*standby.pg_ctl("start"))
        wait_for(self.synchronous, timeout=60, interval=0.1)

    def synchronous(self) -> bool:
        query = "SELECT sync_state FROM pg_stat_replication WHERE application_name = %s"
        return on(self.primary, lambda cur: cur.execute(query, [STANDBY_NAME]).fetchone()) == (
            "sync",
        )

    def create_database(self, env: dict[str, str]) -> None:
        """The test database, created on the primary (the standby replays it) and migrated
        through the multi-host URL."""
        admin = f"postgres://postgres@127.0.0.1:{self.primary.port}/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        command = [sys.executable, str(ROOT / "manage.py"), "migrate", "--no-input", "-v", "0"]
        subprocess.run(command, env={**env, "DATABASE_URL": self.url}, check=True, timeout=300)

    def kill_primary(self) -> None:
        self.primary.stop()  # pg_ctl stop -m immediate: no shutdown checkpoint, clients cut off

    def promote(self) -> None:
        self.standby.run(str(PG_BIN / "pg_ctl"), "promote", "-D", str(self.standby.data), "-w")

    def cleanup(self) -> None:
        for cluster in (self.primary, self.standby):
            with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
                cluster.stop()


def append(cluster: PostgresCluster, *lines: str) -> None:
    """Settings after initdb's (or pg_basebackup's) own: the last one read wins."""
    auto = cluster.data / "postgresql.auto.conf"
    with auto.open("a") as conf:
        conf.write("".join(f"{line}\n" for line in lines))


def on(cluster: PostgresCluster, query: Callable[[Any], Any], database: str = "postgres") -> Any:
    """Runs `query` on a new connection to one server of the pair."""
    url = f"postgres://postgres@127.0.0.1:{cluster.port}/{database}"
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        return query(conn.cursor())


@contextlib.contextmanager
def replicated_postgres() -> Iterator[ReplicatedPostgres]:
    """A started pair, stopped and removed afterwards (a test's fixture wraps it)."""
    if not (PG_BIN / "pg_basebackup").exists():
        pytest.fail(f"PostgreSQL server binaries are required in {PG_BIN} (set PG_BIN)")
    directory = Path(tempfile.mkdtemp(prefix="faults-replicated-"))
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    pair = ReplicatedPostgres(directory)
    try:
        pair.start()
        yield pair
    finally:
        pair.cleanup()
        shutil.rmtree(directory, ignore_errors=True)
