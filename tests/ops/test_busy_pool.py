"""The web of `.ci/up` with its pool taken: a request that finds no free connection answers 503
"busy" with Retry-After after DATABASE_POOL_TIMEOUT, not a 500 after a minute, and /healthz says
the database is busy, not down; a database that is down is still "down" (issue #40)."""

import http.client
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from django.contrib.auth.models import User
from django.db import connection, connections
from django.utils import timezone
from rest_framework.authtoken.models import Token

from scheduling.ops import busy
from tests.conftest import wait_for
from tests.ops.test_busy_database import conninfo
from tests.ops.test_connection_ceiling import running_web
from trainings.models import Team
from trainings.services import training_create

LOCK_WAIT = 5  # seconds the one pooled connection waits on a held lock


@pytest.fixture
def web_of_one_connection(subprocess_env: dict[str, str], tmp_path: Path) -> Iterator[int]:
    """The Procfile's web line with a pool of one connection, given up after 1 s of waiting."""
    with running_web(
        subprocess_env,
        tmp_path / "web.log",
        WEB_DATABASE_POOL="1",
        DATABASE_POOL_TIMEOUT="1",
        DATABASE_LOCK_TIMEOUT=str(LOCK_WAIT),
    ) as port:
        yield port


def request(port: int, method: str, path: str, token: str = "") -> tuple[int, dict[str, str], dict]:
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Authorization": f"Token {token}", "Accept": "application/json"} if token else {}
    client.request(method, path, headers=headers)
    answer = client.getresponse()
    body = answer.read()
    client.close()
    return answer.status, dict(answer.getheaders()), json.loads(body or b"{}")


@pytest.mark.django_db(transaction=True)
def test_a_request_finding_the_pool_taken_is_503_busy_and_healthz_says_busy(
    web_of_one_connection: int,
) -> None:
    port = web_of_one_connection
    token = Token.objects.create(user=User.objects.create_superuser("ops", "", "pw")).key
    start = timezone.now() + timedelta(days=2)
    team = Team.objects.create(name="Lions", quiet_hours=False)
    training = training_create(team=team, start_at=start, end_at=start + timedelta(hours=2))
    assert request(port, "GET", "/healthz")[2]["database"] == "ok"  # the pool's one, made

    with psycopg.connect(conninfo()) as holder, holder.transaction():
        holder.execute("SET idle_in_transaction_session_timeout = '30s'")
        holder.execute("SELECT 1 FROM trainings_training WHERE id = %s FOR UPDATE", [training.pk])
        with ThreadPoolExecutor(max_workers=1) as pool:
            # Holds the pool's only connection while it waits on the lock.
            cancel = pool.submit(
                request, port, "POST", f"/api/trainings/{training.pk}/cancel/", token
            )
            wait_for(lambda: waiting_on_a_lock() == 1, timeout=20)
            unrelated = request(port, "GET", "/api/teams/", token)
            health = request(port, "GET", "/healthz")
            cancelled = cancel.result()

    assert unrelated[0] == 503, unrelated
    assert unrelated[1]["Retry-After"] == str(busy.RETRY_AFTER)
    assert busy.POOL_EXHAUSTED in unrelated[2]["detail"]
    assert health[0] == 503
    assert health[2]["database"] == f"busy: {busy.POOL_EXHAUSTED}"
    assert cancelled[0] == 503
    assert "lock_timeout" in cancelled[2]["detail"]
    assert request(port, "GET", "/api/teams/", token)[0] == 200  # the pool is back


def waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock'"
        )
        return int(cursor.fetchone()[0])


@pytest.mark.django_db
def test_a_database_that_is_down_is_down_not_busy() -> None:
    default = connections["default"]
    dead = type(default)({**default.settings_dict, "PORT": "1"}, alias="dead")

    with pytest.raises(psycopg.OperationalError) as refused:
        busy.connect_past_the_pool(dead)

    assert busy.busy_reason(refused.value) is None
    busy.connect_past_the_pool(default)  # the test database answers: busy, not down
