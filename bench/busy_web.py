"""Benchmark: 12 cancels behind a worker's row locks, through a real web (issue #40, item 3).

    python -m bench.busy_web [--hold S] [--cancels N]    (after `python -m bench.admin_search`)

On bench.admin_search's database: a second connection holds the reminders of N trainings locked
for S seconds (as a batch holding its rows across the network did); meanwhile the web of
`.ci/up` (runserver, a pool of 10, the settings' timeouts unless the environment says otherwise)
gets the N cancels at once, an unrelated `GET /api/teams/` every 0.5 s and `/healthz` every
second. Prints each kind's statuses and slowest answer.
"""

import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
DATABASE = "postgres://postgres@127.0.0.1:5432/scheduling_admin_search_bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hold", type=float, default=30.0)
    parser.add_argument("--cancels", type=int, default=12)
    args = parser.parse_args()
    port, token, trainings = free_port(), api_token(), training_ids(args.cancels)
    web = start_web(port)
    try:
        run(port, token, trainings, args.hold)
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(30)


def run(port: int, token: str, trainings: list[int], hold: float) -> None:
    answers: dict[str, list[tuple[int, float, str]]] = {"teams": [], "healthz": []}
    stop = threading.Event()
    watchers = [
        threading.Thread(
            target=poll, args=(port, "/api/teams/", token, 0.5, stop, answers["teams"])
        ),
        threading.Thread(target=poll, args=(port, "/healthz", "", 1.0, stop, answers["healthz"])),
    ]
    with psycopg.connect(DATABASE.replace("postgres://", "postgresql://")) as holder:
        holder.execute(
            "SELECT id FROM scheduled_training_notification WHERE training_id = ANY(%s) FOR UPDATE",
            [trainings],
        )
        for watcher in watchers:
            watcher.start()
        release = threading.Timer(hold, holder.rollback)
        release.start()
        with ThreadPoolExecutor(max_workers=len(trainings)) as pool:
            cancels = list(
                pool.map(
                    lambda pk: timed(port, "POST", f"/api/trainings/{pk}/cancel/", token), trainings
                )
            )
        release.join()
    stop.set()
    for watcher in watchers:
        watcher.join()
    report(f"{len(trainings)} cancels behind locks held {hold:.0f} s", cancels)
    report("unrelated GET /api/teams/", answers["teams"])
    report("/healthz", answers["healthz"])


def report(label: str, answers: list[tuple[int, float, str]]) -> None:
    statuses = dict(sorted(Counter(status for status, _, _ in answers).items()))
    slowest = max((seconds for _, seconds, _ in answers), default=0.0)
    words = sorted({word for _, _, word in answers if word})
    print(f"{label}: statuses {statuses} (status: answers), slowest {slowest:.2f} s {words}")


def poll(
    port: int, path: str, token: str, every: float, stop: threading.Event, out: list[Any]
) -> None:
    while not stop.is_set():
        out.append(timed(port, "GET", path, token))
        stop.wait(every)


def timed(port: int, method: str, path: str, token: str) -> tuple[int, float, str]:
    started = time.perf_counter()
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    headers = {"Authorization": f"Token {token}", "Accept": "application/json"} if token else {}
    client.request(method, path, headers=headers)
    answer = client.getresponse()
    body = answer.read()
    client.close()
    return answer.status, time.perf_counter() - started, what(path, answer.status, body)


def what(path: str, status: int, body: bytes) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return "" if status < 500 else "not JSON"
    if path == "/healthz":
        return str(data.get("database"))
    return str(data.get("detail", ""))[:60] if status >= 500 else ""


def django_shell(code: str) -> str:
    command = [sys.executable, "manage.py", "shell", "-c", code]
    return subprocess.run(
        command, env=environment(), cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def api_token() -> str:
    code = (
        "from django.contrib.auth.models import User; "
        "from rest_framework.authtoken.models import Token; "
        "user = User.objects.get(username='bench-admin-search'); "
        "print(Token.objects.get_or_create(user=user)[0].key)"
    )
    return django_shell(code).strip().splitlines()[-1]


def training_ids(count: int) -> list[int]:
    code = (
        "from trainings.models import Training; "
        f"print(*Training.objects.filter(cancelled_at=None).values_list('pk', flat=True)[:{count}])"
    )
    return [int(pk) for pk in django_shell(code).strip().splitlines()[-1].split()]


def environment() -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": DATABASE,
        "REDIS_URL": "",
        "CELERY_BROKER_URL": "memory://",
        "DATABASE_POOL_MAX_SIZE": os.environ.get("DATABASE_POOL_MAX_SIZE", "10"),
        "DEBUG": "0",
        "SECRET_KEY": "bench-only-" + "x" * 50,
        "SECURE_SSL_REDIRECT": "0",
    }


def start_web(port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
    web = subprocess.Popen(command, env=environment(), cwd=ROOT, start_new_session=True)
    wait_until(lambda: listening(port))
    return web


def wait_until(condition: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError("the web did not start")
        time.sleep(0.2)


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


if __name__ == "__main__":
    main()
