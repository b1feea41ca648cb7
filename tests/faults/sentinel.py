"""A replicated Redis under Sentinel on this machine: a master, a replica and three Sentinels,
each a real redis-server process on a free port in a temporary directory.

Never the machine's own Redis: a failover test kills the master. The Sentinels agree that a
master is down after DOWN_AFTER_MS without an answer (quorum 2 of 3), then elect one of them to
promote the replica.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.sentinel import MasterNotFoundError, Sentinel

from tests.conftest import wait_for
from tests.faults.conftest import ServerProcess, free_port

MASTER_NAME = "faults"
QUORUM = 2
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 5000


class Node(ServerProcess):
    """One redis-server process (a data node or a Sentinel)."""

    def __init__(self, directory: Path, name: str, *arguments: str) -> None:
        self.directory = directory
        self.name = name
        self.port = free_port()
        self.arguments = arguments
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = open(self.directory / f"{self.name}.log", "ab")  # noqa: SIM115 (the child keeps it)
        self.process = subprocess.Popen(
            ["redis-server", *self.arguments], stdout=log, stderr=log, cwd=self.directory
        )
        log.close()
        wait_for(self.answers, timeout=30, interval=0.05)

    def client(self, db: int = 0) -> redis.Redis:
        return redis.Redis(port=self.port, db=db, socket_timeout=2, socket_connect_timeout=2)

    def answers(self) -> bool:
        try:
            return bool(self.client().ping())
        except redis.RedisError:
            return False

    def kill(self) -> None:
        """SIGKILL: no shutdown, no last write to anyone; as a host that loses power."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def data_node(directory: Path, name: str, replica_of: int | None = None) -> Node:
    node = Node(directory, name)
    node.arguments = (
        *("--port", str(node.port), "--bind", "127.0.0.1", "--dir", str(directory)),
        *("--save", "", "--appendonly", "no", "--dbfilename", f"{name}.rdb"),
        *(("--replicaof", "127.0.0.1", str(replica_of)) if replica_of else ()),
    )
    return node


def sentinel_node(directory: Path, name: str, master_port: int) -> Node:
    node = Node(directory, name)
    config = directory / f"{name}.conf"  # a Sentinel rewrites its own file as it learns
    config.write_text(
        f"port {node.port}\nbind 127.0.0.1\ndir {directory}\n"
        f"sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} {QUORUM}\n"
        f"sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}\n"
        f"sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}\n"
        f"sentinel parallel-syncs {MASTER_NAME} 1\n"
    )
    node.arguments = (str(config), "--sentinel")
    return node


class SentinelRedis:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.master = data_node(directory, "master")
        self.replica = data_node(directory, "replica", replica_of=self.master.port)
        self.sentinels = [
            sentinel_node(directory, f"sentinel{n}", self.master.port) for n in (1, 2, 3)
        ]

    @property
    def nodes(self) -> list[Node]:
        return [self.master, self.replica, *self.sentinels]

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        wait_for(self._ready, timeout=60, interval=0.1)

    def _ready(self) -> bool:
        """The replica in sync, and every Sentinel knowing the replica and the two others."""
        info = self.master.client().info("replication")
        if info.get("connected_slaves") != 1 or info["slave0"]["state"] != "online":
            return False
        for sentinel in self.sentinels:
            client = sentinel.client()
            if len(client.sentinel_slaves(MASTER_NAME)) != 1:
                return False
            if len(client.sentinel_sentinels(MASTER_NAME)) != len(self.sentinels) - 1:
                return False
        return True

    def env(self, *, database: int = 0) -> dict[str, str]:
        """Settings for processes using it (project/settings.py): cache and locks on
        `database`, the broker on the next, both through the Sentinels."""
        return {
            "REDIS_URL": f"redis://127.0.0.1:{self.master.port}/{database}",
            "REDIS_SENTINELS": ",".join(f"127.0.0.1:{node.port}" for node in self.sentinels),
            "REDIS_SENTINEL_MASTER": MASTER_NAME,
            "CELERY_BROKER_URL": ";".join(
                f"sentinel://127.0.0.1:{node.port}/{database + 1}" for node in self.sentinels
            ),
        }

    def master_port(self) -> int | None:
        """The master's port as clients see it: redis-py asks the Sentinels in turn and takes
        the first answer that names a master no Sentinel flags as down (None: none yet)."""
        sentinels = Sentinel(
            [("127.0.0.1", node.port) for node in self.sentinels],
            sentinel_kwargs={"socket_timeout": 1, "socket_connect_timeout": 1},
        )
        try:
            return int(sentinels.discover_master(MASTER_NAME)[1])
        except MasterNotFoundError:
            return None

    def promoted(self) -> bool:
        """Failover done: clients are sent to the replica, and it has taken the master's role."""
        if self.master_port() != self.replica.port:
            return False
        return self.replica.client().info("replication")["role"] == "master"

    def data(self, database: int) -> redis.Redis:
        """A client of the current master's `database`."""
        port = self.master_port()
        assert port is not None, "no Sentinel answers"
        return redis.Redis(port=port, db=database, socket_timeout=5, socket_connect_timeout=5)

    def cleanup(self) -> None:
        for node in self.nodes:
            node.cleanup()


@pytest.fixture
def sentinel_redis() -> Iterator[SentinelRedis]:
    if shutil.which("redis-server") is None:
        pytest.fail(
            "redis-server is required for the fault suite (install the redis-server package)"
        )
    cluster = started_cluster()
    try:
        yield cluster
    finally:
        cluster.cleanup()
        shutil.rmtree(cluster.directory, ignore_errors=True)


def started_cluster(tries: int = 2) -> SentinelRedis:
    """A cluster whose Sentinels all know each other. Five processes finding each other on free
    ports once missed the minute it is given on a CI run; the test is about the failover, so a
    cluster that did not form is replaced once, on new ports."""
    for attempt in range(1, tries + 1):
        cluster = SentinelRedis(Path(tempfile.mkdtemp(prefix="faults-sentinel-")))
        try:
            cluster.start()
            return cluster
        except AssertionError:
            cluster.cleanup()
            shutil.rmtree(cluster.directory, ignore_errors=True)
            if attempt == tries:
                raise
    raise AssertionError("unreachable")


def measure_failover(cluster: SentinelRedis, thaw: Node | None = None, poll: float = 0.02) -> float:
    """Kills the master (and thaws `thaw` then); returns the seconds until the Sentinels have
    promoted the replica."""
    killed_at = time.monotonic()
    cluster.master.kill()
    if thaw is not None:
        thaw.thaw()
    wait_for(cluster.promoted, timeout=60, interval=poll)
    return time.monotonic() - killed_at
