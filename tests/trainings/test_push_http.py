"""The HTTP push backend against a local fake FCM: per-player results, retries through the
lifecycle (not Celery's), one push per player and event whatever the service does first.

The handler records results on a second connection, which sees only committed rows: these
tests run in transactions that commit (`transaction=True`).
"""

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from scheduling.delivery.sweep.run import sweep
from scheduling.rows.models import ScheduledEvent
from tests.conftest import ROOT, manage, queued_events, start_worker, stop_process, wait_for
from tests.trainings.factories import PlayerFactory
from tests.trainings.fake_fcm import (
    BEARER,
    INTERNAL,
    INVALID_ARGUMENT,
    OK,
    PROJECT,
    UNREGISTERED,
    FakeFcm,
    hang,
    quota_exceeded,
)
from trainings.models import PushResult, ScheduledTrainingNotification
from trainings.push import PushRetryLater, get_push_backend
from trainings.push.fcm import retry_after_seconds
from trainings.push.results import close_results_connection
from trainings.services import training_create
from trainings.tasks import send_training_reminder

Status = ScheduledEvent.Status
Result = PushResult.Status
READ_TIMEOUT = 0.5
HANG = 3 * READ_TIMEOUT


@pytest.fixture
def fcm():
    server = FakeFcm().start()
    yield server
    server.stop()


def push_settings(url: str) -> dict[str, str]:
    return {
        "TRAININGS_PUSH_BACKEND": "trainings.push.HttpPushBackend",
        "TRAININGS_PUSH_URL": url,
        "TRAININGS_PUSH_PROJECT": PROJECT,
        "TRAININGS_PUSH_TOKEN": BEARER,
        "TRAININGS_PUSH_TIMEOUT": str(READ_TIMEOUT),
        "TRAININGS_PUSH_CONNECT_TIMEOUT": str(READ_TIMEOUT),
    }


@pytest.fixture
def http_push(fcm, settings):
    for name, value in push_settings(fcm.url).items():
        setattr(settings, name, float(value) if "TIMEOUT" in name else value)
    yield fcm
    close_results_connection()  # or the test database could not be dropped at the end


@pytest.fixture
def squad(team):
    """Five players, each with a token the fake answers differently, and one without a token."""
    names = ("ok", "flaky", "slow", "gone", "bad")
    players = {
        name: PlayerFactory(team=team, name=name, push_token=f"{name}-token") for name in names
    }
    return {**players, "no-token": PlayerFactory(team=team, name="no-token", push_token="")}


@pytest.fixture
def reminder(team, squad, broker):
    """The -90 minute reminder of a training two hours from now, published; its event."""
    start = timezone.now() + timedelta(hours=2)
    training = training_create(team=team, start_at=start, end_at=start + timedelta(hours=1))
    due = start - timedelta(minutes=90)
    (event,) = publish(due, broker)
    return {"training": training, "event": event, "due": due}


def publish(now, broker):
    """Sweep at `now` (the sweep's clock stands in for the passing minutes) and take the
    published events off the queue."""
    sweep(ScheduledTrainingNotification, now=now)
    events = queued_events(broker, "trainings")
    broker.delete("trainings")
    return events


def results():
    return {r.player.name: r for r in PushResult.objects.select_related("player")}


def row_of(event):
    return ScheduledTrainingNotification.objects.get(pk=event["pk"])


pytestmark = pytest.mark.django_db(transaction=True)


def test_each_player_gets_one_fcm_v1_request_carrying_the_event_id(http_push, squad, reminder):
    event = reminder["event"]

    assert send_training_reminder(event) == "sent 6"

    (request,) = http_push.requests_for("ok-token")
    assert request.authorization == f"Bearer {BEARER}"
    message = request.body["message"]
    assert message["token"] == "ok-token"
    assert message["notification"]["title"] == "Questionnaire before your training"
    assert "90 minutes" in message["notification"]["body"]
    assert message["data"] == {
        "event_id": event["id"],
        "training": str(reminder["training"].pk),
        "kind": "pre_questionnaire",
    }
    assert message["android"]["notification"]["tag"] == event["id"]
    sent = results()["ok"]
    assert (sent.status, sent.attempts, sent.event_id) == (Result.SENT, 1, event["id"])
    assert sent.message_name.startswith(f"projects/{PROJECT}/messages/")
    assert sent.sent_at is not None
    assert row_of(event).handled_at is not None


def test_a_failing_service_is_retried_by_the_sweep_and_each_player_gets_one_push(
    http_push, squad, reminder, broker
):
    http_push.script("flaky-token", INTERNAL, OK)
    http_push.script("slow-token", hang(HANG), OK)
    http_push.script("gone-token", UNREGISTERED)
    http_push.script("bad-token", INVALID_ARGUMENT)
    event = reminder["event"]

    with pytest.raises(PushRetryLater, match="2 of 6 pushes to retry"):
        send_training_reminder(event)

    row = row_of(event)
    assert (row.status, row.handled_at, row.attempts) == (Status.PENDING, None, 1)
    assert "flaky" not in row.last_error  # players are named by id, errors by code
    assert f"player {squad['flaky'].pk}: INTERNAL" in row.last_error
    assert f"player {squad['slow'].pk}: timeout" in row.last_error
    first = {name: (r.status, r.attempts) for name, r in results().items()}
    assert first == {
        "ok": (Result.SENT, 1),
        "flaky": (Result.RETRYABLE, 1),
        "slow": (Result.RETRYABLE, 1),
        "gone": (Result.PERMANENT, 1),
        "bad": (Result.PERMANENT, 1),
        "no-token": (Result.SKIPPED, 0),
    }

    (again,) = publish(row.due_at, broker)
    assert again["id"] == event["id"]  # the same event: the results of the first try count
    assert send_training_reminder(again) == "sent 6"

    for name in ("ok", "flaky", "slow"):
        assert http_push.delivered(f"{name}-token") == 1, name
    assert len(http_push.requests_for("ok-token")) == 1  # not sent again on the retry
    assert len(http_push.requests_for("gone-token")) == 1  # refused for good: not retried
    assert len(http_push.requests_for("bad-token")) == 1
    final = {name: (r.status, r.attempts) for name, r in results().items()}
    assert final == {**first, "flaky": (Result.SENT, 2), "slow": (Result.SENT, 2)}
    assert results()["gone"].error_code == "UNREGISTERED"
    assert results()["bad"].error_code == "INVALID_ARGUMENT"
    squad["gone"].refresh_from_db()
    squad["bad"].refresh_from_db()
    assert squad["gone"].push_token == ""  # the app was uninstalled: later reminders skip it
    assert squad["bad"].push_token == "bad-token"  # a bad message says nothing of the token
    row.refresh_from_db()
    assert (row.status, row.attempts) == (Status.DELIVERED, 2)
    assert row.handled_at is not None
    assert publish(reminder["due"], broker) == []  # nothing left to try


def test_only_permanent_failures_leave_the_event_handled(http_push, squad, reminder):
    for name in ("ok", "flaky", "slow", "gone"):
        http_push.script(f"{name}-token", UNREGISTERED)
    http_push.script("bad-token", INVALID_ARGUMENT)

    assert send_training_reminder(reminder["event"]) == "sent 6"

    assert row_of(reminder["event"]).handled_at is not None
    statuses = {r.status for name, r in results().items() if name != "no-token"}
    assert statuses == {Result.PERMANENT}


def test_a_quota_error_stops_the_batch_and_the_retry_waits_for_retry_after(
    http_push, squad, reminder
):
    for name in ("ok", "flaky", "slow", "gone", "bad"):
        http_push.script(f"{name}-token", quota_exceeded("120"))
    before = timezone.now()

    with pytest.raises(PushRetryLater) as raised:
        send_training_reminder(reminder["event"])

    assert raised.value.not_before >= before + timedelta(seconds=120)
    (asked,) = http_push.received  # the others were left for the retry
    tried = [r for r in results().values() if r.attempts]
    assert [(r.player.push_token, r.status, r.error_code) for r in tried] == [
        (asked.token, Result.RETRYABLE, "QUOTA_EXCEEDED")
    ]
    untried = [r for r in results().values() if r.attempts == 0 and r.player.push_token]
    assert len(untried) == 4
    assert {(r.status, r.error[:9]) for r in untried} == {(Result.RETRYABLE, "not tried")}
    row = row_of(reminder["event"])
    assert row.status == Status.PENDING
    assert row.due_at >= before + timedelta(seconds=120)  # later than the lifecycle's backoff
    assert row.version == reminder["event"]["version"]  # the retry keeps the event id


def test_an_unreachable_service_costs_one_connection_attempt_per_try(
    fcm, http_push, squad, reminder, settings
):
    fcm.stop()  # nothing listens on its port any more

    with pytest.raises(PushRetryLater, match="unreachable"):
        send_training_reminder(reminder["event"])

    attempts = {name: r.attempts for name, r in results().items() if name != "no-token"}
    assert sorted(attempts.values()) == [0, 0, 0, 0, 1]
    assert row_of(reminder["event"]).status == Status.PENDING


@pytest.mark.parametrize(
    ("setting", "value", "code"),
    [
        ("TRAININGS_PUSH_PROJECT", "someone-elses", "NOT_FOUND"),  # 404 without UNREGISTERED
        ("TRAININGS_PUSH_TOKEN", "expired-token", "UNAUTHENTICATED"),  # 401
    ],
)
def test_a_misconfiguration_fails_the_try_instead_of_every_player_for_good(
    http_push, squad, reminder, settings, setting, value, code
):
    setattr(settings, setting, value)

    with pytest.raises(PushRetryLater, match="5 of 6 pushes to retry"):
        send_training_reminder(reminder["event"])

    assert len(http_push.received) == 1  # the rest of the batch waits for the retry
    tried = [r for name, r in results().items() if name != "no-token"]
    assert {(r.status, r.error_code) for r in tried} == {(Result.RETRYABLE, code)}
    assert row_of(reminder["event"]).status == Status.PENDING


def test_two_timeouts_in_a_row_leave_the_rest_of_the_batch_for_the_retry(
    http_push, squad, reminder
):
    for name in ("ok", "flaky", "slow", "gone", "bad"):
        http_push.script(f"{name}-token", hang(HANG), OK)

    with pytest.raises(PushRetryLater, match="5 of 6 pushes to retry"):
        send_training_reminder(reminder["event"])

    assert len(http_push.arrived) == 2
    attempts = {name: r.attempts for name, r in results().items() if name != "no-token"}
    assert sorted(attempts.values()) == [0, 0, 0, 1, 1]
    assert {
        r.error_code for r in results().values() if r.attempts == 0 and r.player.push_token
    } == {"timeout"}


def test_a_duplicate_message_after_the_event_was_handled_sends_nothing(http_push, reminder):
    event = reminder["event"]
    send_training_reminder(event)
    requests = len(http_push.received)

    assert send_training_reminder(event) == "skipped"
    assert len(http_push.received) == requests


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("TRAININGS_PUSH_PROJECT", ""),
        ("TRAININGS_PUSH_PROJECT", "Demo/Project"),
        ("TRAININGS_PUSH_TOKEN", ""),
        ("TRAININGS_PUSH_URL", "https://"),
        ("TRAININGS_PUSH_TIMEOUT", 0),
    ],
)
def test_the_http_backend_refuses_bad_settings_naming_them(http_push, settings, name, value):
    setattr(settings, name, value)
    with pytest.raises(ImproperlyConfigured, match=f"^{name}=.* is not valid"):
        get_push_backend()


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"TRAININGS_PUSH_TIMEOUT": "soon"}, "TRAININGS_PUSH_TIMEOUT='soon' is not valid"),
        ({"TRAININGS_PUSH_URL": "fcm.example"}, "TRAININGS_PUSH_URL='fcm.example' is not valid"),
        (
            {"TRAININGS_PUSH_BACKEND": "trainings.push.HttpPushBackend"},
            "TRAININGS_PUSH_PROJECT=(empty) is not valid",
        ),
    ],
)
def test_the_project_refuses_to_start_with_bad_push_settings(variables, message):
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "project.settings", **variables}
    started = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert started.returncode != 0
    assert message in started.stderr


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("", None), ("30", 30.0), ("soon", None), ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0)],
)
def test_retry_after_is_read_as_seconds_or_an_http_date(header, seconds):
    import httpx

    response = httpx.Response(429, headers={"Retry-After": header} if header else {})
    assert retry_after_seconds(response) == seconds


def test_a_future_retry_after_date_counts_from_now():
    import httpx

    at = datetime.now(UTC) + timedelta(minutes=5)
    response = httpx.Response(
        503, headers={"Retry-After": at.strftime("%a, %d %b %Y %H:%M:%S GMT")}
    )
    assert 240 < retry_after_seconds(response) <= 300


def test_the_admin_shows_push_results_on_the_training_and_the_player(
    http_push, squad, reminder, client
):
    http_push.script("gone-token", UNREGISTERED)
    send_training_reminder(reminder["event"])
    client.force_login(User.objects.create_superuser("admin", password="x"))

    page = client.get(f"/admin/trainings/training/{reminder['training'].pk}/change/")
    assert page.status_code == 200
    assert page.content.decode().count("UNREGISTERED") == 1
    assert "Failed, not retried" in page.content.decode()
    player_page = client.get(f"/admin/trainings/player/{squad['gone'].pk}/change/")
    assert player_page.status_code == 200
    assert "UNREGISTERED" in player_page.content.decode()
    assert reminder["event"]["id"] in player_page.content.decode()


# --- end to end: a real worker and a real sweep loop on the real clock ----------------------

WORKER_LOG = f"push-http-worker-{os.environ['TEST_REDIS_PAIR']}"


def e2e_env(subprocess_env, fcm, **extra):
    return {
        **subprocess_env,
        **push_settings(fcm.url),
        "SCHEDULING_SWEEP_INTERVAL": "0.2",
        "SCHEDULING_RETRY_BACKOFF": "0.5",
        "SCHEDULING_RETRY_BACKOFF_MAX": "1",
        **extra,
    }


def worker_ready(log_name):
    log = ROOT / ".run" / f"{log_name}.log"
    return log.exists() and " ready." in log.read_text()


def reminder_due_soon(team):
    """A training whose -90 minute reminder falls due a few seconds from now; that row."""
    start = timezone.now() + timedelta(minutes=90, seconds=3)
    training = training_create(team=team, start_at=start, end_at=start + timedelta(hours=1))
    return ScheduledTrainingNotification.objects.get(
        training=training, offset=timedelta(minutes=-90)
    )


@pytest.mark.slow
def test_a_worker_and_the_sweep_loop_get_one_push_to_every_player_despite_failures(
    fcm, team, squad, subprocess_env
):
    fcm.script("flaky-token", INTERNAL, INTERNAL, OK)
    fcm.script("slow-token", hang(HANG), OK)
    fcm.script("gone-token", UNREGISTERED)
    env = e2e_env(subprocess_env, fcm)
    worker = start_worker(env, "trainings", WORKER_LOG)
    sweeper = manage(env, "sweep", "--loop", "trainings.ScheduledTrainingNotification")
    try:
        row = reminder_due_soon(team)
        wait_for(lambda: row_of({"pk": row.pk}).handled_at is not None, timeout=90)
    finally:
        stop_process(sweeper)
        stop_process(worker)

    row.refresh_from_db()
    assert (row.status, row.attempts) == (Status.DELIVERED, 3)  # flaky failed twice
    for name in ("ok", "flaky", "slow", "bad"):
        assert fcm.delivered(f"{name}-token") == 1, name
    assert [len(fcm.requests_for(f"{n}-token")) for n in ("ok", "flaky", "slow", "gone")] == [
        1,
        3,
        2,
        1,
    ]
    assert {r.body["message"]["data"]["event_id"] for r in fcm.received} == {row.event_id}
    final = {name: (r.status, r.attempts) for name, r in results().items()}
    assert final == {
        "ok": (Result.SENT, 1),
        "flaky": (Result.SENT, 3),
        "slow": (Result.SENT, 2),
        "gone": (Result.PERMANENT, 1),
        "bad": (Result.SENT, 1),
        "no-token": (Result.SKIPPED, 0),
    }
    squad["gone"].refresh_from_db()
    assert squad["gone"].push_token == ""
    assert (
        ScheduledTrainingNotification.objects.exclude(pk=row.pk)
        .filter(status=Status.DELIVERED)
        .count()
        == 0
    )


@pytest.mark.slow
def test_a_worker_killed_mid_batch_repeats_no_push_it_had_recorded(
    fcm, team, squad, subprocess_env
):
    """The worker dies while its request to the last player hangs. The event, never handled,
    is published again after the handling timeout; the next worker sends to that player only."""
    fcm.script("slow-token", hang(60), OK)  # the last player in name order
    sweeper_env = e2e_env(subprocess_env, fcm, SCHEDULING_HANDLING_TIMEOUT="3")
    sweeper = manage(sweeper_env, "sweep", "--loop", "trainings.ScheduledTrainingNotification")
    doomed = start_worker(
        e2e_env(subprocess_env, fcm, TRAININGS_PUSH_TIMEOUT="60"), "trainings", WORKER_LOG
    )
    try:
        # Consuming before the reminder falls due, so only the kill makes the event wait
        # past the handling timeout.
        wait_for(lambda: worker_ready(WORKER_LOG), timeout=90)
        row = reminder_due_soon(team)
        wait_for(lambda: "slow-token" in fcm.arrived, timeout=90)
        doomed.kill()  # mid-batch: five pushes out and recorded, the sixth in flight
        doomed.wait()
        successor = start_worker(e2e_env(subprocess_env, fcm), "trainings", f"{WORKER_LOG}-2")
        try:
            wait_for(lambda: row_of({"pk": row.pk}).handled_at is not None, timeout=90)
        finally:
            stop_process(successor)
    finally:
        stop_process(sweeper)

    for name in ("ok", "flaky", "gone", "bad"):
        assert len(fcm.requests_for(f"{name}-token")) == 1, name
    assert fcm.arrived.count("slow-token") == 2
    assert fcm.delivered("slow-token") == 1
    assert {name: r.status for name, r in results().items()} == {
        **dict.fromkeys(("ok", "flaky", "slow", "gone", "bad"), Result.SENT),
        "no-token": Result.SKIPPED,
    }
    row.refresh_from_db()
    assert row.attempts == 2  # the first publication, then the one after the handling timeout
