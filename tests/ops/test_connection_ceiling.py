"""The web of `.ci/up` holds at most its pool of PostgreSQL connections whatever its clients do:
its Procfile line, started as `.ci/up` starts it (project settings, honcho's shell), answers
110 keep-alive client connections, one request each and left open, with no 500."""

import http.client
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import connection

from tests.conftest import wait_for
from tests.ops.procfile import process_env, procfile_process
from tests.ops.test_up_processes import free_port

CLIENTS = 110
CEILING = 30  # the bound for the whole web process


def database_connections(name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [name],
        )
        return cursor.fetchone()[0]


class Peak:
    """The most connections to the test database seen, sampled while the clients run."""

    def __init__(self, name: str) -> None:
        self.name, self.most, self.done = name, 0, threading.Event()
        self.thread = threading.Thread(target=self.sample)

    def sample(self) -> None:
        while not self.done.wait(0.05):
            self.most = max(self.most, database_connections(self.name))


def held_open_request(port: int) -> tuple[int, http.client.HTTPConnection]:
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    client.request("GET", "/healthz")
    response = client.getresponse()
    response.read()
    return response.status, client  # left open: the server's thread waits for its next request


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def running_web(subprocess_env: dict[str, str], log_path: Path, **settings: str) -> Iterator[int]:
    """The Procfile's web line on a free port, with `settings` in its environment; its port."""
    port = free_port()
    env = process_env(subprocess_env, PORT=str(port), **settings)
    with procfile_process("web", env, log_path):
        wait_for(lambda: listening(port), timeout=60)
        yield port


@pytest.fixture
def web(subprocess_env, tmp_path):
    with running_web(subprocess_env, tmp_path / "web.log", DEBUG="1") as port:
        yield port


@pytest.mark.django_db(transaction=True)
def test_the_web_answers_110_held_open_clients_within_its_ceiling_of_connections(web):
    name = connection.settings_dict["NAME"]
    peak = Peak(name)
    peak.thread.start()
    try:
        with ThreadPoolExecutor(max_workers=22) as pool:
            answers = list(pool.map(lambda _: held_open_request(web), range(CLIENTS)))
        held = database_connections(name)
    finally:
        peak.done.set()
        peak.thread.join()
    statuses = sorted({status for status, _ in answers})
    for _, client in answers:
        client.close()

    assert len(answers) == CLIENTS
    assert 500 not in statuses, statuses
    assert statuses in ([200], [200, 503], [503])  # 503: a dependency /healthz names is away
    assert held <= CEILING
    assert peak.most <= CEILING, peak.most
    print(f"connections while {CLIENTS} clients held open: {held}, peak {peak.most}")
