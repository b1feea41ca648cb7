"""Push backends. TRAININGS_PUSH_BACKEND names the class.

RecordingPushBackend (the default) and LoggingPushBackend need no credentials and stay for
development and tests. HttpPushBackend sends through an FCM HTTP v1-shaped service and records
what each player's push came to in PushResult (docs/push.md).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS, connections
from django.utils import timezone
from django.utils.connection import ConnectionDoesNotExist
from django.utils.module_loading import import_string

from trainings.models import Player, PushNotification, PushResult, Training

log = logging.getLogger(__name__)

Result = PushResult.Status


@dataclass(frozen=True)
class Push:
    player: Player
    training: Training
    kind: str
    title: str
    body: str
    event_id: str


class PushBackend(Protocol):
    def send(self, pushes: Sequence[Push]) -> None: ...


class RecordingPushBackend:
    """Records what was sent; runs inside the handler's transaction, so it is effect-once."""

    def send(self, pushes: Sequence[Push]) -> None:
        PushNotification.objects.bulk_create(
            PushNotification(
                player=push.player,
                training=push.training,
                kind=push.kind,
                title=push.title,
                body=push.body,
                event_id=push.event_id,
            )
            for push in pushes
        )


class LoggingPushBackend:
    def send(self, pushes: Sequence[Push]) -> None:
        for push in pushes:
            log.info(
                "push %s to player %s for training %s: %s",
                push.kind,
                push.player.pk,
                push.training.pk,
                push.title,
            )


def get_push_backend() -> PushBackend:
    path = settings.TRAININGS_PUSH_BACKEND
    try:
        backend_class = import_string(path)
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"TRAININGS_PUSH_BACKEND={path!r} is not valid: expected a dotted class path such "
            "as trainings.push.RecordingPushBackend, trainings.push.LoggingPushBackend or "
            f"trainings.push.HttpPushBackend ({exc})."
        ) from None
    backend: PushBackend = backend_class()
    return backend


# --- HTTP (FCM HTTP v1) -------------------------------------------------------------------


class PushRetryLater(Exception):
    """Some pushes of a batch failed in a way a later try may mend (5xx, 429, a timeout, the
    service unreachable). Raised after the whole batch, so `handle_once` records it on the row
    and the sweep publishes the event again after a backoff; the players already sent to, or
    refused for good, are left alone on that try."""

    def __init__(self, message: str, *, not_before: datetime | None = None) -> None:
        super().__init__(message)
        self.not_before = not_before  # the service's Retry-After, if it gave one


@dataclass(frozen=True)
class Outcome:
    status: str
    message_name: str = ""
    error_code: str = ""
    error: str = ""
    retry_after: float | None = None  # seconds
    # The service as a whole refuses (unreachable, quota, credentials): every other push of
    # the batch would fail the same way, so they wait for the retry instead of each costing
    # a timeout while the handler holds its row.
    stops_batch: bool = False
    tried: bool = True


SKIPPED = Outcome(Result.SKIPPED, error="the player has no device token", tried=False)
# FCM's project ids: 6 to 30 lowercase letters, digits and hyphens, a letter first.
PROJECT_ID = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]")
# Per player: a token the service refused for good (the app was uninstalled, the token
# expired) is cleared, so later reminders skip the player until the app registers again.
UNREGISTERED = "UNREGISTERED"
SENDER_ID_MISMATCH = "SENDER_ID_MISMATCH"  # a 403 about one token, not about our credentials
INVALID_ARGUMENT = "INVALID_ARGUMENT"  # a 400: this message or its token is malformed


@dataclass(frozen=True)
class HttpPushConfig:
    url: str
    project: str
    token: str
    timeout: float
    connect_timeout: float

    @classmethod
    def from_settings(cls) -> HttpPushConfig:
        config = cls(
            url=str(settings.TRAININGS_PUSH_URL).rstrip("/"),
            project=settings.TRAININGS_PUSH_PROJECT,
            token=settings.TRAININGS_PUSH_TOKEN,
            timeout=settings.TRAININGS_PUSH_TIMEOUT,
            connect_timeout=settings.TRAININGS_PUSH_CONNECT_TIMEOUT,
        )
        config.check()
        return config

    def check(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise refuse("TRAININGS_PUSH_URL", self.url, "https://host[:port] (the API's base)")
        if not PROJECT_ID.fullmatch(self.project):
            raise refuse(
                "TRAININGS_PUSH_PROJECT",
                self.project,
                "the project id: 6-30 lowercase letters, digits and hyphens, a letter first",
            )
        if not self.token:
            raise refuse("TRAININGS_PUSH_TOKEN", self.token, "the bearer token of the push API")
        for name, value in (
            ("TRAININGS_PUSH_TIMEOUT", self.timeout),
            ("TRAININGS_PUSH_CONNECT_TIMEOUT", self.connect_timeout),
        ):
            if not isinstance(value, int | float) or not value > 0:
                raise refuse(name, value, "a number > 0 (seconds)")

    @property
    def send_path(self) -> str:
        return f"/v1/projects/{self.project}/messages:send"


def refuse(name: str, value: object, expected: str) -> ImproperlyConfigured:
    shown = "(empty)" if value == "" else repr(value)
    return ImproperlyConfigured(
        f"{name}={shown} is not valid for trainings.push.HttpPushBackend: expected {expected}."
    )


@functools.cache
def http_client(base_url: str, timeout: float, connect_timeout: float) -> httpx.Client:
    """One client per process and configuration: its pool keeps connections (and TLS
    sessions) open across reminders. httpx clients are safe to share between threads."""
    return httpx.Client(
        base_url=base_url,
        timeout=httpx.Timeout(timeout, connect=connect_timeout),
        follow_redirects=False,
    )


class HttpPushBackend:
    """FCM HTTP v1: one `messages:send` request per player (v1 has no multicast).

    Runs inside the handler's transaction (the reminder's row locked), but records each
    player's result on a connection of its own, committed right after the request: a try that
    fails for some players rolls the handler's transaction back, and the next try must still
    know who was sent to. A crash between a request and its record repeats that one push.
    """

    def __init__(self) -> None:
        self.config = HttpPushConfig.from_settings()  # at start too: the app's ready() builds one

    @property
    def client(self) -> httpx.Client:
        # Made at the first send, not in __init__: a Celery parent builds a backend at start
        # and forks its pool processes, which must not share its sockets.
        return http_client(self.config.url, self.config.timeout, self.config.connect_timeout)

    def send(self, pushes: Sequence[Push]) -> None:
        if not pushes:
            return
        results = ResultLog(pushes)
        outcomes: list[tuple[Push, Outcome]] = []
        stopped: Outcome | None = None
        for push in pushes:
            if results.is_final(push):
                continue  # sent, refused for good or skipped on an earlier try of this event
            outcome = self.outcome_for(push, stopped)
            results.record(push, outcome)
            outcomes.append((push, outcome))
            if stopped is None and stops_batch(outcomes):
                stopped = outcome
        log_batch(pushes, outcomes)
        retryable = [(p, o) for p, o in outcomes if o.status == Result.RETRYABLE]
        if retryable:
            raise retry_later(retryable, total=len(pushes))

    def outcome_for(self, push: Push, stopped: Outcome | None) -> Outcome:
        if not push.player.push_token:
            return SKIPPED
        if stopped is not None:
            return Outcome(
                Result.RETRYABLE,
                error_code=stopped.error_code,
                error=f"not tried: an earlier push of the batch got {stopped.error_code}",
                tried=False,
            )
        return self.post(push)

    def post(self, push: Push) -> Outcome:
        headers = {"Authorization": f"Bearer {self.config.token}"}
        try:
            response = self.client.post(
                self.config.send_path, json=fcm_message(push), headers=headers
            )
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            return Outcome(
                Result.RETRYABLE, error_code="unreachable", error=describe(exc), stops_batch=True
            )
        except httpx.TimeoutException as exc:
            # The service may have accepted the push before the read timed out: the retry can
            # repeat it, and the receiver can tell by data.event_id (docs/push.md).
            return Outcome(Result.RETRYABLE, error_code="timeout", error=describe(exc))
        except httpx.TransportError as exc:
            return Outcome(Result.RETRYABLE, error_code="network", error=describe(exc))
        return outcome_of(response)


# A service that accepts connections but answers nobody would otherwise cost a read timeout
# per player while the handler holds its row.
TIMEOUTS_IN_A_ROW = 2


def stops_batch(outcomes: list[tuple[Push, Outcome]]) -> bool:
    """Whether the latest outcome says the service as a whole is failing."""
    if outcomes[-1][1].stops_batch:
        return True
    tried = [outcome for _, outcome in outcomes if outcome.tried][-TIMEOUTS_IN_A_ROW:]
    return len(tried) == TIMEOUTS_IN_A_ROW and all(o.error_code == "timeout" for o in tried)


def log_batch(pushes: Sequence[Push], outcomes: list[tuple[Push, Outcome]]) -> None:
    counts: dict[str, int] = {}
    for _, outcome in outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    log.info(
        "push %s: %s (%d already done)",
        pushes[0].event_id,
        ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "nothing to send",
        len(pushes) - len(outcomes),
    )


def fcm_message(push: Push) -> dict[str, Any]:
    """The v1 request body. The event id goes along as an idempotency hint: in `data` for the
    app, and as the notification's tag / collapse id, so a repeated push replaces the first on
    the device instead of showing twice (v1's own API has no idempotency key)."""
    apns_headers = {"apns-collapse-id": push.event_id} if len(push.event_id) <= 64 else {}
    return {
        "message": {
            "token": push.player.push_token,
            "notification": {"title": push.title, "body": push.body},
            # FCM data values must be strings.
            "data": {
                "event_id": push.event_id,
                "training": str(push.training.pk),
                "kind": push.kind,
            },
            "android": {"notification": {"tag": push.event_id}},
            "apns": {"headers": apns_headers},
        }
    }


def outcome_of(response: httpx.Response) -> Outcome:
    status = response.status_code
    if 200 <= status < 300:
        name = json_of(response).get("name")
        return Outcome(Result.SENT, message_name=name if isinstance(name, str) else "")
    code, message = fcm_error(response)
    error = f"HTTP {status}: {message}"[:500]
    retry_after = retry_after_seconds(response)
    if status >= 500 or status == 408:
        return Outcome(Result.RETRYABLE, error_code=code, error=error, retry_after=retry_after)
    if about_this_token(status, code):
        return Outcome(Result.PERMANENT, error_code=code, error=error)
    # 429 (quota), 401 / 403 (our credentials), a 404 without UNREGISTERED (a wrong project or
    # URL), anything else: every push of the batch would get the same. Retried, not given up
    # for each player: once it is mended (or a person retries the failed row) all are sent.
    return Outcome(
        Result.RETRYABLE, error_code=code, error=error, retry_after=retry_after, stops_batch=True
    )


def about_this_token(status: int, code: str) -> bool:
    """The refusals that concern one message or token, which no retry will change."""
    return (
        (status == 400 and code == INVALID_ARGUMENT)
        or (status == 403 and code == SENDER_ID_MISMATCH)
        or (status == 404 and code == UNREGISTERED)
    )


def fcm_error(response: httpx.Response) -> tuple[str, str]:
    """(code, message) of an error answer: FCM's own errorCode (UNREGISTERED,
    SENDER_ID_MISMATCH…) from its details, else the API status (INVALID_ARGUMENT…), else the
    HTTP status."""
    error = json_of(response).get("error")
    if not isinstance(error, dict):
        return f"HTTP_{response.status_code}", response.reason_phrase
    details = error.get("details")
    codes = [
        detail.get("errorCode")
        for detail in (details if isinstance(details, list) else [])
        if isinstance(detail, dict)
    ]
    code = next((c for c in codes if isinstance(c, str)), None) or error.get("status")
    message = error.get("message")
    return (
        str(code or f"HTTP_{response.status_code}")[:64],
        str(message or response.reason_phrase),
    )


def json_of(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def retry_after_seconds(response: httpx.Response) -> float | None:
    """Retry-After as seconds from now: delay-seconds or an HTTP date (RFC 9110)."""
    raw = response.headers.get("Retry-After", "").strip()
    if not raw:
        return None
    if raw.isdigit():
        return float(raw)
    try:
        at = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if at.tzinfo is None:
        return None
    return max((at - timezone.now()).total_seconds(), 0.0)


def retry_later(retryable: list[tuple[Push, Outcome]], *, total: int) -> PushRetryLater:
    delays = [o.retry_after for _, o in retryable if o.retry_after is not None]
    not_before = timezone.now() + timedelta(seconds=max(delays)) if delays else None
    shown = "; ".join(f"player {p.player.pk}: {o.error_code}" for p, o in retryable[:5])
    more = f"; {len(retryable) - 5} more" if len(retryable) > 5 else ""
    return PushRetryLater(
        f"{len(retryable)} of {total} pushes to retry ({shown}{more})", not_before=not_before
    )


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


# --- the results' own connection ---------------------------------------------------------

RESULTS_DB = "trainings_push_results"


def results_db() -> str:
    """The alias of a second connection to the default database, for this thread.

    Autocommit, outside the handler's transaction: a result written on it is committed at
    once, whatever the handler's transaction does next. Registered for the thread only (not in
    DATABASES), so nothing else (migrations, the test runner's databases) sees it. On SQLite
    (the embedded mode) a second writer would wait for the handler's write lock, so results
    share the handler's transaction there and a retried event may repeat pushes.
    """
    default = connections[DEFAULT_DB_ALIAS]
    if default.vendor != "postgresql":
        return DEFAULT_DB_ALIAS
    try:
        side = connections[RESULTS_DB]
    except ConnectionDoesNotExist:
        side = type(default)(copy.deepcopy(default.settings_dict), RESULTS_DB)
        connections[RESULTS_DB] = side
    side.close_if_unusable_or_obsolete()  # CONN_MAX_AGE and health checks, as for default
    return RESULTS_DB


def close_results_connection() -> None:
    with contextlib.suppress(ConnectionDoesNotExist):
        connections[RESULTS_DB].close()


class ResultLog:
    """The PushResult rows of one batch's events, read and written on the results connection.

    Tries of one event never overlap (the handler holds the reminder's row lock throughout),
    so a read-modify-write here races with nothing.
    """

    def __init__(self, pushes: Sequence[Push]) -> None:
        self.db = results_db()
        existing = PushResult.objects.using(self.db).filter(
            event_id__in={push.event_id for push in pushes},
            player_id__in={push.player.pk for push in pushes},
        )
        self.rows = {(row.event_id, row.player_id): row for row in existing}

    def is_final(self, push: Push) -> bool:
        row = self.rows.get((push.event_id, push.player.pk))
        return row is not None and row.status in PushResult.FINAL

    def record(self, push: Push, outcome: Outcome) -> None:
        row = self.rows.get((push.event_id, push.player.pk)) or PushResult(
            event_id=push.event_id,
            training_id=push.training.pk,
            player_id=push.player.pk,
            kind=push.kind,
        )
        row.status = outcome.status
        row.message_name = outcome.message_name
        row.error_code = outcome.error_code
        row.error = outcome.error
        row.attempts += 1 if outcome.tried else 0
        row.sent_at = timezone.now() if outcome.status == Result.SENT else None
        row.save(using=self.db)
        self.rows[(row.event_id, row.player_id)] = row
        if outcome.error_code == UNREGISTERED:
            forget_token(push, using=self.db)


def forget_token(push: Push, *, using: str) -> None:
    # Only the token we sent to: the app may have registered a new one meanwhile.
    Player.objects.using(using).filter(pk=push.player.pk, push_token=push.player.push_token).update(
        push_token=""
    )
    log.info("player %s: push token unregistered, cleared", push.player.pk)
