"""Read replicas: which reads go to the "replica" alias (a test mirror of default, with its own
connection) once the router and middleware are on. Each statement is seen through the
connection's execute wrapper, so a test tells which database answered a request.

A mirror is the primary itself, so it has always replayed everything: a replica that is behind
a client's write is that client's write remembered past what the server has reached (the real
lag, a paused standby, is tests/faults/test_read_replicas.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.checks import Error, Warning
from django.core.management import call_command
from django.db import connections, router, transaction
from django.test import RequestFactory

from scheduling.delivery import metrics
from scheduling.delivery.testing import run_due
from scheduling.jobs.models import Job
from scheduling.rows.replicas import (
    ReplicaRouter,
    check_read_replicas,
    choice,
    fallbacks,
    positions,
)
from scheduling.rows.replicas.state import serving
from scheduling.rows.states import Status
from tests.conftest import client_for
from tests.factories import ScheduledPingFactory, make_due_pings
from tests.scheduling.jobs.conftest import JOBS, put_job
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "replica", "second"])

PINGS = "/api/events/testapp/scheduledping/"
ROUTER = "scheduling.rows.replicas.ReplicaRouter"
MIDDLEWARE = "scheduling.rows.replicas.ReplicaReadsMiddleware"
TABLES = ("scheduled_ping", "scheduling_job", "scheduled_job_run")


class Statements:
    """The SQL each alias ran meanwhile."""

    def __init__(self) -> None:
        self.sql: dict[str, list[str]] = {"default": [], "replica": []}

    def wrapper(self, alias: str) -> Any:
        def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            self.sql[alias].append(sql)
            return execute(sql, params, many, context)

        return record

    def touching(self, alias: str, *tables: str) -> list[str]:
        tables = tables or TABLES
        return [sql for sql in self.sql[alias] if any(table in sql for table in tables)]


@contextmanager
def statements() -> Iterator[Statements]:
    seen = Statements()
    with ExitStack() as stack:
        for alias in seen.sql:
            stack.enter_context(connections[alias].execute_wrapper(seen.wrapper(alias)))
        yield seen


@pytest.fixture
def replica_reads(settings: Any) -> Iterator[None]:
    settings.SCHEDULING_READ_REPLICAS = {"default": ["replica"]}
    settings.DATABASE_ROUTERS = [ROUTER, *settings.DATABASE_ROUTERS]
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, MIDDLEWARE]
    choice._down.clear()
    yield
    choice._down.clear()


@pytest.fixture
def other_user(db: None) -> User:
    return User.objects.create_superuser("other", "other@example.com", "pw")


def far_ahead() -> int:
    """A position the server has not reached: a write it has not replayed yet."""
    return positions.replica_position("replica") + (1 << 40)


# --- safe requests ------------------------------------------------------------------------------


def test_an_api_list_get_reads_the_replica(replica_reads, api):
    row = ScheduledPingFactory()

    with statements() as seen:
        response = api.get(PINGS)

    assert response.status_code == 200
    assert [item["id"] for item in response.json()["results"]] == [row.pk]
    assert seen.touching("replica", "scheduled_ping")
    assert seen.touching("default") == []


def test_without_the_middleware_every_read_stays_on_the_primary(settings, api):
    settings.SCHEDULING_READ_REPLICAS = {"default": ["replica"]}
    settings.DATABASE_ROUTERS = [ROUTER, *settings.DATABASE_ROUTERS]
    ScheduledPingFactory()

    with statements() as seen:
        assert api.get(PINGS).status_code == 200

    assert seen.sql["replica"] == []
    assert seen.touching("default", "scheduled_ping")


def test_the_dashboard_counts_are_read_from_the_replica(replica_reads, admin_client):
    make_due_pings(3)

    with statements() as seen:
        data = admin_client.get("/admin/scheduling/dashboard/data/").json()

    (pings,) = [m for m in data["models"] if m["model"] == "testapp.scheduledping"]
    assert pings["due_now"] == 3
    assert seen.touching("replica", "scheduled_ping")
    assert seen.touching("default", "scheduled_ping") == []


def test_healthz_and_metrics_read_the_primary(replica_reads, admin_client):
    make_due_pings(2)

    with statements() as seen:
        assert admin_client.get("/healthz").status_code in (200, 503)
        assert admin_client.get("/metrics").status_code == 200

    assert seen.sql["replica"] == []
    assert seen.touching("default", "scheduled_ping")


# --- read-your-writes ---------------------------------------------------------------------------


def test_a_write_remembers_the_primary_position_for_its_user(replica_reads, api, api_user):
    before = positions.primary_position("default")

    assert put_job(api, "replica-1").status_code == 201

    written = positions.written_position(str(api_user.pk), "default")
    assert written is not None
    assert before <= written <= positions.primary_position("default")


def test_the_writer_reads_the_replica_once_it_has_replayed_the_write(replica_reads, api):
    with statements() as seen:
        assert put_job(api, "replica-2").status_code == 201
        written = len(seen.sql["replica"])
        response = api.get(f"{JOBS}replica-2/")

    assert written == 0  # the write and its own reads: the primary only
    assert response.status_code == 200
    assert seen.touching("replica", "scheduling_job")


def test_the_writer_reads_the_primary_until_the_replica_has_replayed_its_write(
    replica_reads, api, api_user, other_user
):
    assert put_job(api, "replica-3").status_code == 201
    positions.remember_write(str(api_user.pk), "default", far_ahead())

    with statements() as seen:
        response = api.get(f"{JOBS}replica-3/")

    assert response.status_code == 200
    assert response.json()["key"] == "replica-3"
    assert seen.touching("default", "scheduling_job")
    assert seen.touching("replica", "scheduling_job") == []
    assert fallbacks.fallback_counts() == {("replica", "behind"): 1}

    with statements() as seen:
        assert client_for(other_user).get(f"{JOBS}replica-3/").status_code == 200

    assert seen.touching("replica", "scheduling_job")
    assert seen.touching("default", "scheduling_job") == []


def test_a_forgotten_write_no_longer_holds_its_writer_on_the_primary(replica_reads, api, api_user):
    positions.remember_write(str(api_user.pk), "default", far_ahead())
    redis_key = positions.key(str(api_user.pk), "default")
    ttl = metrics_store().ttl(redis_key)
    assert 0 < ttl <= positions.WRITE_MEMORY
    metrics_store().delete(redis_key)  # what the TTL does

    with statements() as seen:
        assert api.get(PINGS).status_code == 200

    assert seen.touching("replica", "scheduled_ping")


def test_a_later_write_never_lowers_the_remembered_position(replica_reads, api_user):
    client = str(api_user.pk)
    positions.remember_write(client, "default", 500)
    positions.remember_write(client, "default", 400)

    assert positions.written_position(client, "default") == 500


def metrics_store() -> Any:
    from scheduling.rows.databases import redis_client_for_locks

    return redis_client_for_locks()


# --- what never reads a replica -----------------------------------------------------------------


def test_the_sweep_and_handling_never_touch_the_replica(replica_reads, broker):
    make_due_pings(3)

    with statements() as seen:
        assert run_due(ScheduledPing) == 3
        make_due_pings(2)
        call_command("sweep", "testapp.ScheduledPing")
        call_command("scheduling_status")

    assert seen.sql["replica"] == []
    assert ScheduledPing.objects.filter(status=Status.DELIVERED).count() == 5


def test_unsafe_requests_read_the_primary(replica_reads, api):
    row = ScheduledPingFactory()

    with statements() as seen:
        response = api.post(f"{PINGS}cancel/", {"filter": {"ping": row.ping_id}}, format="json")

    assert response.status_code == 200, response.content
    assert seen.sql["replica"] == []


def test_in_a_safe_request_a_transaction_reads_and_locks_on_the_primary(replica_reads):
    token = serving.set(choice.ReadState(RequestFactory().get("/")))
    try:
        assert router.db_for_read(ScheduledPing) == "replica"
        assert ScheduledPing.objects.select_for_update().db == "default"
        assert ScheduledPing.objects.all().db == "replica"
        with transaction.atomic():
            assert router.db_for_read(ScheduledPing) == "default"
            assert ScheduledPing.objects.select_for_update().db == "default"
    finally:
        serving.reset(token)
    assert router.db_for_read(ScheduledPing) == "default"


def test_a_row_read_from_the_replica_is_saved_on_the_primary(replica_reads):
    row = ScheduledPingFactory()
    loaded = ScheduledPing.objects.using("replica").get(pk=row.pk)

    assert router.db_for_write(ScheduledPing, instance=loaded) == "default"
    assert router.allow_relation(loaded, row)
    assert router.allow_migrate("replica", "testapp") is False
    assert ReplicaRouter().allow_migrate("default", "testapp") is None


class PingsOnTheMirror:
    """A host's router that puts the pings on a database of their own: the mirror alias."""

    def db_for_write(self, model: Any, **hints: Any) -> str | None:
        return "replica" if model is ScheduledPing else None

    db_for_read = db_for_write


def test_the_router_picks_a_replica_of_the_write_alias_the_host_router_chose(settings):
    # The pings' primary is the mirror alias, and default serves as its replica; default
    # itself has no replica here.
    settings.SCHEDULING_READ_REPLICAS = {"replica": ["default"]}
    settings.DATABASE_ROUTERS = [ROUTER, PingsOnTheMirror()]
    token = serving.set(choice.ReadState(RequestFactory().get("/")))
    try:
        assert router.db_for_read(ScheduledPing) == "default"
        assert router.db_for_read(Job) == "default"  # no replica: the routers' choice
        assert router.db_for_write(ScheduledPing) == "replica"
    finally:
        serving.reset(token)
    assert router.db_for_read(ScheduledPing) == "replica"  # outside a safe request


# --- a replica away -----------------------------------------------------------------------------


@pytest.fixture
def replica_away() -> Iterator[None]:
    replica = connections["replica"]
    kept = replica.settings_dict["PORT"]
    replica.close()
    replica.settings_dict["PORT"] = "1"  # nothing listens there: refused at once
    yield
    replica.close()
    replica.settings_dict["PORT"] = kept


def test_an_unreachable_replica_falls_back_to_the_primary_logged_once_and_counted(
    replica_reads, replica_away, api, caplog
):
    ScheduledPingFactory()

    with caplog.at_level(logging.WARNING, logger="scheduling.replicas"):
        answers = [api.get(PINGS).status_code for _ in range(2)]

    assert answers == [200, 200]
    (line,) = [r.getMessage() for r in caplog.records if r.name == "scheduling.replicas"]
    assert "read replica 'replica' is unreachable" in line
    assert fallbacks.fallback_counts() == {("replica", "unreachable"): 2}
    assert 'scheduling_replica_fallbacks_total{reason="unreachable",replica="replica"} 2.0' in (
        metrics.exposition().decode()
    )


def test_with_the_record_of_writes_away_a_signed_in_client_reads_the_primary(
    replica_reads, settings, api, caplog
):
    ScheduledPingFactory()
    away = {**settings.CACHES["default"], "LOCATION": "redis://127.0.0.1:1/0"}
    settings.CACHES = {"default": away}  # nothing listens there: refused at once

    with statements() as seen, caplog.at_level(logging.WARNING, logger="scheduling.replicas"):
        answers = [api.get(PINGS).status_code for _ in range(2)]

    assert answers == [200, 200]
    assert seen.sql["replica"] == []
    (line,) = [r.getMessage() for r in caplog.records if r.name == "scheduling.replicas"]
    assert "the record of writes is unreachable" in line


# --- the setting --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ({"default": ["replca"]}, "names 'replca', which is not in DATABASES"),
        ({"primary": ["replica"]}, "names 'primary' as a write alias, which is not in DATABASES"),
        ({"default": "replica"}, "SCHEDULING_READ_REPLICAS['default']='replica' is not valid"),
        ({"default": ["default"]}, "names 'default', its own write alias"),
        (["replica"], "SCHEDULING_READ_REPLICAS=['replica'] is not valid"),
    ],
)
def test_a_bad_setting_is_a_check_error_naming_it_and_the_accepted_form(settings, value, named):
    settings.SCHEDULING_READ_REPLICAS = value

    (error,) = check_read_replicas()

    assert isinstance(error, Error)
    assert error.id == "scheduling.E010"
    assert named in error.msg
    assert "expected a dict of write alias to a list of replica aliases" in error.msg
    assert "{'default': ['replica']}" in error.msg


class OtherRouter:
    """A host's router with an opinion on nothing."""


def test_the_setting_without_the_router_first_and_the_middleware_is_a_warning(settings):
    settings.SCHEDULING_READ_REPLICAS = {"default": ["replica"]}
    settings.DATABASE_ROUTERS = [OtherRouter(), ROUTER]

    found = check_read_replicas()

    assert [type(each) for each in found] == [Warning, Warning]
    assert "DATABASE_ROUTERS does not start with" in found[0].msg
    assert "MIDDLEWARE does not list" in found[1].msg


def test_the_enabled_setting_passes_the_check(replica_reads):
    assert check_read_replicas() == []
