"""HttpPushBackend: FCM HTTP v1 through an httpx client per process, each player's result
recorded on the results' own connection (docs/push.md)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from scheduling import RetryLater
from trainings.push.backends import Push, log
from trainings.push.fcm import SKIPPED, Outcome, Result, fcm_message, outcome_of
from trainings.push.results import ResultLog


class PushRetryLater(RetryLater):
    """Some pushes of a reminder failed in a way a later try may mend (5xx, 429, a timeout, the
    service unreachable). Raised after all of them, so the handler records it on the row and
    the sweep publishes the event again after a backoff, or after the service's Retry-After
    (`not_before`); the players already sent to, or refused for good, are left alone on that
    try."""


# FCM's project ids: 6 to 30 lowercase letters, digits and hyphens, a letter first.
PROJECT_ID = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]")


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
