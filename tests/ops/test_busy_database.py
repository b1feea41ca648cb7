"""A web request that meets a busy database answers 503 "busy" with Retry-After (issue #40):
a row lock held by another connection (a worker's batch) costs a request at most the web's
lock_timeout, for the API and the admin alike; the timeouts are the web's only."""

from collections.abc import Callable, Iterator
from datetime import timedelta

import psycopg
import pytest
from django.contrib.auth.models import User
from django.db import OperationalError, connection, transaction
from django.test import Client, override_settings
from django.utils import timezone

from scheduling.ops import busy
from trainings.models import ScheduledTrainingNotification, Team
from trainings.services import training_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def training() -> object:
    start = timezone.now() + timedelta(days=2)
    team = Team.objects.create(name="Lions", quiet_hours=False)
    return training_create(team=team, start_at=start, end_at=start + timedelta(hours=2))


def conninfo() -> str:
    db = connection.settings_dict
    return f"host={db['HOST']} port={db['PORT']} user={db['USER']} dbname={db['NAME']}"


@pytest.fixture
def reminders_locked(training: object) -> Iterator[None]:
    """A second connection holds the training's reminders locked, as a worker's batch does;
    it gives them up after 20 s whatever happens, so a request that waits is a failure, not a
    hang."""
    with psycopg.connect(conninfo(), autocommit=False) as holder:
        holder.execute("SET idle_in_transaction_session_timeout = '20s'")
        holder.execute(
            "SELECT id FROM scheduled_training_notification WHERE training_id = %s FOR UPDATE",
            [training.pk],  # type: ignore[attr-defined]
        )
        yield
        holder.rollback()


def server_default(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reset_val FROM pg_settings WHERE name = %s", [name])
        return str(cursor.fetchone()[0])


@override_settings(DATABASE_LOCK_TIMEOUT=0.5)
def test_an_api_cancel_behind_a_held_lock_is_503_busy_with_retry_after(
    api: Client, training: object, reminders_locked: None
) -> None:
    answer = api.post(f"/api/trainings/{training.pk}/cancel/")  # type: ignore[attr-defined]

    assert answer.status_code == 503, answer.content
    assert answer["Retry-After"] == str(busy.RETRY_AFTER)
    assert "busy" in answer.json()["detail"]
    assert "lock_timeout" in answer.json()["detail"]
    pending = ScheduledTrainingNotification.objects.filter(status="pending").count()
    assert pending == ScheduledTrainingNotification.objects.count() > 0  # nothing cancelled


@override_settings(DATABASE_LOCK_TIMEOUT=0.5)
def test_an_admin_cancel_behind_a_held_lock_is_a_503_busy_page(
    admin_user: User, training: object, reminders_locked: None
) -> None:
    client = Client()
    client.force_login(admin_user)
    rows = ScheduledTrainingNotification.objects.values_list("pk", flat=True)
    body = {"action": "cancel_rows", "_selected_action": [str(pk) for pk in rows]}

    answer = client.post("/admin/trainings/scheduledtrainingnotification/", body)

    assert answer.status_code == 503
    assert answer["Retry-After"] == str(busy.RETRY_AFTER)
    assert b"The database is busy" in answer.content
    assert answer["Content-Type"].startswith("text/html")


@override_settings(DATABASE_LOCK_TIMEOUT=0.5, DATABASE_STATEMENT_TIMEOUT=0.25)
def test_the_timeouts_are_the_requests_and_go_back_to_the_servers_after_it(
    api: Client, training: object
) -> None:
    defaults = server_default("lock_timeout"), server_default("statement_timeout")
    seen = []

    def after_each_statement(execute: Callable[..., object], *args: object) -> object:
        result = execute(*args)
        seen.append(current())
        return result

    with connection.execute_wrapper(after_each_statement):
        assert api.get("/api/teams/").status_code == 200

    assert seen
    assert set(seen) == {("500ms", "250ms")}
    assert current() == defaults  # what a worker or a command sharing the connection gets


def current() -> tuple[str, str]:
    with connection.connection.cursor() as cursor:  # the driver's: no wrapper, no log
        cursor.execute(
            "SELECT current_setting('lock_timeout'), current_setting('statement_timeout')"
        )
        return tuple(cursor.fetchone())


def error_of(statement: str) -> OperationalError:
    with (
        pytest.raises(OperationalError) as raised,
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(statement)
    return raised.value


def test_lock_and_statement_timeouts_are_busy_other_errors_are_not(training: object) -> None:
    with psycopg.connect(conninfo()) as holder, holder.transaction():
        holder.execute("LOCK TABLE trainings_team IN ACCESS EXCLUSIVE MODE")
        lock_wait = error_of("SET LOCAL lock_timeout = '50ms'; SELECT * FROM trainings_team")
    long_statement = error_of("SET LOCAL statement_timeout = '50ms'; SELECT pg_sleep(1)")
    dead = psycopg.OperationalError("connection failed: Connection refused")

    assert busy.busy_reason(lock_wait) == busy.BUSY_STATES["55P03"]
    assert busy.busy_reason(long_statement) == busy.BUSY_STATES["57014"]
    assert busy.busy_reason(dead) is None
    assert busy.busy_reason(ValueError("x")) is None
