"""A paced client: POSTs at a steady rate from several threads, each request timed from the
instant it was due to start, so a slow answer delays the next and is counted; with the spells
of late requests and the UTC instant each began, to line them up with PostgreSQL's log."""

import http.client
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from bench.create import PORT

CLIENT_THREADS = 16
STALL = 1.0  # seconds: a request this late belongs to a stall


@dataclass(frozen=True)
class Pace:
    total: int  # requests
    interval: float  # seconds between two requests' intended starts
    begin: float  # monotonic instant the first is due
    seconds: float  # what is not sent by begin + seconds counts as not sent

    def due(self, n: int) -> float:
        return self.begin + n * self.interval

    def over(self) -> bool:
        return time.monotonic() > self.begin + self.seconds


@dataclass
class Requests:
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    # (the instant the request was due, by the wall clock; its latency): to line a stall up
    # with PostgreSQL's log.
    timeline: list[tuple[float, float]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, due: float, latency: float, failure: str | None) -> None:
        with self.lock:
            self.latencies.append(latency)
            self.timeline.append((due, latency))
            if failure is not None:
                self.failures.append(failure)


def post_paced(
    pace: Pace, path: str, token: str, body: Callable[[int], bytes], results: Requests
) -> None:
    """POST body(n) for n below pace.total at its intended start, expecting 201 Created."""
    wall = time.time() - time.monotonic()  # monotonic instant + wall = wall-clock instant

    def client(offset: int) -> None:
        for n in range(offset, pace.total, CLIENT_THREADS):
            if pace.over():
                return  # the window is over: what was not sent by then counts as not sent
            time.sleep(max(0.0, pace.due(n) - time.monotonic()))
            status, answer = post(path, token, body(n))
            failure = None if status == 201 else f"{status} {answer[:200]!r}"
            results.add(wall + pace.due(n), time.monotonic() - pace.due(n), failure)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENT_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def post(path: str, token: str, body: bytes) -> tuple[int, bytes]:
    """The status and body of one POST on a new connection; 0 and the error if none came."""
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    try:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    except OSError as exc:
        return 0, str(exc).encode()
    finally:
        conn.close()


WARM_UP_REQUESTS = 40


def warm_up(path: str, token: str) -> None:
    """A production web is warm: each gunicorn worker's first requests import and build what the
    later ones reuse (the URLconf, DRF, the serializer's fields).
    Before the paced client starts, so that a cold start is not counted as the window's: POSTs
    the serializer refuses (400), so nothing is created, from a few threads, so every worker
    takes some."""
    refused = orjson.dumps({"name": "", "cron": "not a cron"})
    threads = [
        threading.Thread(
            target=lambda: [post(path, token, refused) for _ in range(WARM_UP_REQUESTS // 8)]
        )
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def stalls(timeline: list[tuple[float, float]]) -> list[tuple[float, float, int]]:
    """Spells of requests later than STALL, as (first due instant, worst latency, count):
    requests due within STALL of each other belong to the same spell."""
    spells: list[tuple[float, float, int]] = []
    last_due = float("-inf")
    for due, latency in sorted(timeline):
        if latency < STALL:
            continue
        if spells and due - last_due <= STALL:
            first, worst, count = spells[-1]
            spells[-1] = (first, max(worst, latency), count + 1)
        else:
            spells.append((due, latency, 1))
        last_due = due
    return spells
