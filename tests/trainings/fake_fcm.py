"""A local stand-in for FCM's HTTP v1 send endpoint, for the HTTP push backend's tests.

It listens on a free port of 127.0.0.1 in the test process (threaded, so a reply that hangs
does not hold up the others), answers each device token from a script, and records every
request it received and what it answered.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROJECT = "demo-project"
BEARER = "test-bearer-token"
SEND_PATH = f"/v1/projects/{PROJECT}/messages:send"


@dataclass(frozen=True)
class Reply:
    status: int = 200
    error_code: str = ""  # FCM's errorCode in the error's details (UNREGISTERED…)
    api_status: str = ""  # the API's status (NOT_FOUND, UNAVAILABLE…)
    headers: dict[str, str] = field(default_factory=dict)
    hang: float = 0.0  # seconds to wait before answering: past the client's read timeout


OK = Reply()
INTERNAL = Reply(500, api_status="INTERNAL")
UNREGISTERED = Reply(404, error_code="UNREGISTERED", api_status="NOT_FOUND")
INVALID_ARGUMENT = Reply(400, error_code="INVALID_ARGUMENT", api_status="INVALID_ARGUMENT")


def hang(seconds: float) -> Reply:
    return Reply(hang=seconds)


def quota_exceeded(retry_after: str) -> Reply:
    return Reply(429, "QUOTA_EXCEEDED", "RESOURCE_EXHAUSTED", headers={"Retry-After": retry_after})


@dataclass(frozen=True)
class Received:
    token: str
    body: dict[str, Any]
    authorization: str
    answered: int | None  # the status sent back; None when the client had gone (a hang)


class FakeFcm:
    def __init__(self) -> None:
        self.scripts: dict[str, list[Reply]] = {}
        self.received: list[Received] = []
        self.arrived: list[str] = []  # tokens, as requests come in (before any reply)
        self.delay = 0.0  # seconds every reply takes (a slow service, well inside the timeout)
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, token: str, *replies: Reply) -> None:
        """Answer `token`'s requests with `replies` in turn, then with the last one; a token
        without a script gets 200."""
        self.scripts[token] = list(replies)

    def next_reply(self, token: str) -> Reply:
        with self.lock:
            replies = self.scripts.get(token, [OK])
            return replies.pop(0) if len(replies) > 1 else replies[0]

    def record(self, received: Received) -> None:
        with self.lock:
            self.received.append(received)

    def requests_for(self, token: str) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.token == token]

    def delivered(self, token: str) -> int:
        """Pushes the service accepted for `token` (answered 200 to a client still there)."""
        return sum(1 for r in self.requests_for(token) if r.answered == 200)

    def start(self) -> FakeFcm:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def handler_for(fake: FakeFcm) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            token = body.get("message", {}).get("token", "")
            authorization = self.headers.get("Authorization", "")
            if self.path != SEND_PATH:
                reply = Reply(404, api_status="NOT_FOUND")
            elif authorization != f"Bearer {BEARER}":
                reply = Reply(401, api_status="UNAUTHENTICATED")
            else:
                reply = fake.next_reply(token)
            with fake.lock:
                fake.arrived.append(token)
            answered = self.answer(reply)
            fake.record(Received(token, body, authorization, answered))

        def answer(self, reply: Reply) -> int | None:
            time.sleep(reply.hang or fake.delay)
            payload = json.dumps(error_body(reply) if reply.status >= 400 else success_body())
            try:
                self.send_response(reply.status)
                for name, value in {**reply.headers, "Content-Type": "application/json"}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload.encode())
            except (BrokenPipeError, ConnectionResetError):
                return None
            # A client that timed out has closed its end, which a write may not notice.
            return None if reply.hang else reply.status

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

    return Handler


_message_ids = iter(range(1, 1_000_000))


def success_body() -> dict[str, Any]:
    return {"name": f"projects/{PROJECT}/messages/{next(_message_ids)}"}


def error_body(reply: Reply) -> dict[str, Any]:
    details = (
        [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code}]
        if (code := reply.error_code)
        else []
    )
    return {
        "error": {
            "code": reply.status,
            "message": f"fake FCM: {reply.error_code or reply.api_status}",
            "status": reply.api_status,
            "details": details,
        }
    }
