"""Read replicas on a real streaming standby: the site under gunicorn with DATABASE_REPLICA_URL
naming the standby (the demo settings then turn the router and middleware on).

With the standby's replay paused, a client that has just written still reads its write (from
the primary), while another client is served by the standby, which has not replayed it yet.
With replay running, a client that creates and at once reads back always finds its row, though
a synchronous commit waits only for the standby to flush the WAL, not to replay it.
"""

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import wait_for
from tests.faults.replication import DATABASE, ReplicatedPostgres, on, replicated_postgres
from tests.faults.test_postgres_failover import Web

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

WRITER, READER = "w" * 40, "r" * 40  # API tokens
METRICS_TOKEN = "replica-metrics"
ROUNDS = 30
USERS = """
WITH users AS (
    INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email,
                           is_staff, is_active, date_joined)
    VALUES ('!', true, 'writer', '', '', '', true, true, now()),
           ('!', true, 'reader', '', '', '', true, true, now())
    RETURNING id, username
)
INSERT INTO authtoken_token (key, created, user_id)
SELECT CASE username WHEN 'writer' THEN %(writer)s ELSE %(reader)s END, now(), id FROM users
"""
FALLBACKS = re.compile(
    r'scheduling_replica_fallbacks_total\{reason="behind",replica="replica"\} ([0-9.]+)'
)


@pytest.fixture
def pair() -> Iterator[ReplicatedPostgres]:
    with replicated_postgres() as started:
        yield started


class Api:
    def __init__(self, web: Web, token: str) -> None:
        self.base = f"http://127.0.0.1:{web.port}"
        self.headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base + path, data=data, method=method, headers=self.headers
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return int(response.status), json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return int(error.code), None

    def put_job(self, key: str) -> int:
        body = {"schedules": ["2030-01-01T09:00:00Z"], "callback": {"type": "queue", "queue": "q"}}
        return self.call("PUT", f"/api/jobs/{key}/", body)[0]

    def job(self, key: str) -> int:
        return self.call("GET", f"/api/jobs/{key}/")[0]


def fallbacks_behind(web: Web) -> float:
    request = urllib.request.Request(
        f"http://127.0.0.1:{web.port}/metrics",
        headers={"Authorization": f"Bearer {METRICS_TOKEN}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        found = FALLBACKS.search(response.read().decode())
    return float(found[1]) if found else 0.0


def replay(pair: ReplicatedPostgres, action: str) -> None:
    on(pair.standby, lambda cur: cur.execute(f"SELECT pg_wal_replay_{action}()"))


def paused(pair: ReplicatedPostgres) -> bool:
    """Replay has stopped: no record written from now on is applied until it resumes."""
    query = "SELECT pg_get_wal_replay_pause_state()"
    return bool(on(pair.standby, lambda cur: cur.execute(query).fetchone()[0]) == "paused")


def test_a_writer_reads_its_writes_at_once_and_other_clients_read_the_standby(
    subprocess_env, pair, fault_report
):
    env = {
        **subprocess_env,
        "DATABASE_URL": pair.url,
        "DATABASE_REPLICA_URL": pair.standby.url,
        "SCHEDULING_METRICS_TOKEN": METRICS_TOKEN,
    }
    pair.create_database(env)
    on(pair.primary, lambda cur: cur.execute(USERS, {"writer": WRITER, "reader": READER}), DATABASE)
    web = Web(env)
    writer, reader = Api(web, WRITER), Api(web, READER)
    try:
        wait_for(lambda: reader.call("GET", "/api/jobs/")[0] == 200, timeout=60, interval=0.1)
        created_and_read = [
            (writer.put_job(f"at-once-{n}"), writer.job(f"at-once-{n}")) for n in range(ROUNDS)
        ]

        replay(pair, "pause")
        wait_for(lambda: paused(pair), timeout=30, interval=0.05)
        created = writer.put_job("while-paused")
        writer_sees = writer.job("while-paused")
        reader_sees = reader.job("while-paused")
        behind = fallbacks_behind(web)
        replay(pair, "resume")
        wait_for(lambda: reader.job("while-paused") == 200, timeout=60, interval=0.1)
    finally:
        web.stop()

    fault_report(rounds=ROUNDS, writer_fallbacks_while_paused=behind)
    assert created_and_read == [(201, 200)] * ROUNDS
    assert (created, writer_sees) == (201, 200)  # read-your-writes, from the primary
    assert reader_sees == 404  # served by the standby, which has not replayed it
    assert behind >= 1
