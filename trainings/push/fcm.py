"""FCM HTTP v1 on the wire: the request body of one push, and what an answer comes to."""

from __future__ import annotations

from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
from django.utils import timezone

from trainings.models import PushResult
from trainings.push.backends import Push

Result = PushResult.Status

# Per player: a token the service refused for good (the app was uninstalled, the token
# expired) is cleared, so later reminders skip the player until the app registers again.
UNREGISTERED = "UNREGISTERED"
SENDER_ID_MISMATCH = "SENDER_ID_MISMATCH"  # a 403 about one token, not about our credentials
INVALID_ARGUMENT = "INVALID_ARGUMENT"  # a 400: this message or its token is malformed


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
