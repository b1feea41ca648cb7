"""What `.ci/up`'s processes share: the web's port in every process's links, and with
LOG_FORMAT=json every line each process writes is one JSON object, each error once."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, stop_process, wait_for

PRINT_SITE_URL = (
    "import django, os; django.setup(); from django.conf import settings; "
    "print(os.environ['PORT'], settings.PURCHASES_SITE_URL, flush=True)"
)


def up_environment(**variables: str) -> dict[str, str]:
    """The environment `.ci/up` gives honcho: its export_process_env, from .ci/setup."""
    script = f'source "{ROOT}/.ci/setup" && export_process_env && env -0'
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), **variables}
    output = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout
    return dict(line.split("=", 1) for line in output.split("\0") if "=" in line)


def test_every_process_under_honcho_links_to_the_webs_port(tmp_path: Path) -> None:
    procfile = tmp_path / "Procfile"
    python = f'{sys.executable} -c "{PRINT_SITE_URL}"; sleep 3'
    procfile.write_text(f"web: {python}\nworker: {python}\nbeat: {python}\n")
    env = up_environment(DJANGO_SETTINGS_MODULE="project.settings", PYTHONPATH=str(ROOT))
    honcho = Path(sys.executable).parent / "honcho"

    output = subprocess.run(
        [str(honcho), "-f", str(procfile), "-d", str(ROOT), "start", "--no-prefix"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout

    seen = sorted(line.split() for line in output.splitlines() if "http" in line)
    assert [port for port, _ in seen] == ["8000", "8100", "8200"]  # honcho's own PORTs
    assert {url for _, url in seen} == {"http://localhost:8000"}


def test_json_mode_quiets_celery_and_drops_honchos_prefix() -> None:
    assert up_environment(LOG_FORMAT="json")["CELERY_QUIET"] == "--quiet"
    assert up_environment(LOG_FORMAT="json")["HONCHO_OPTIONS"] == "--no-prefix"
    assert up_environment()["CELERY_QUIET"] == ""


def json_lines(text: str) -> list[dict]:
    lines = [line for line in text.splitlines() if line.strip()]
    return [json.loads(line) for line in lines]  # fails on any line that is not JSON


def test_an_error_is_one_json_line_and_access_lines_are_json() -> None:
    code = (
        "import django, logging; django.setup(); "
        "logging.getLogger('django.request').error('Internal Server Error: /boom/'); "
        "logging.getLogger('django.server').info('\"GET /healthz HTTP/1.1\" 200 2')"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "LOG_FORMAT": "json",
        "DEBUG": "1",  # Django's own console handler for "django" is only on with DEBUG
    }
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True
    )

    records = json_lines(result.stdout + result.stderr)  # every line JSON, django-axes' too
    ours = [r for r in records if r["logger"].startswith("django")]
    assert [(r["logger"], r["level"]) for r in ours] == [
        ("django.request", "ERROR"),
        ("django.server", "INFO"),
    ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def read_until(log_path: Path, text: str, timeout: float = 60) -> str:
    wait_for(lambda: text in log_path.read_text(), timeout=timeout)
    return log_path.read_text()


@pytest.mark.slow
def test_the_webs_banner_checks_and_access_lines_are_json(subprocess_env, tmp_path) -> None:
    port, log_path = free_port(), tmp_path / "web.log"
    env = {**subprocess_env, "LOG_FORMAT": "json", "DEBUG": "1"}
    command = [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
    with log_path.open("w") as log:
        web = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        read_until(log_path, "Starting development server")
        subprocess.run(["curl", "-s", "-o", "/dev/null", f"http://127.0.0.1:{port}/healthz"])
        text = read_until(log_path, "GET /healthz")
    finally:
        stop_process(web)

    messages = [record["message"] for record in json_lines(text)]
    assert any(m.startswith("Performing system checks") for m in messages)
    assert any("Starting development server" in m for m in messages)


@pytest.mark.slow
def test_a_quiet_worker_logs_its_start_as_one_json_line(subprocess_env, tmp_path) -> None:
    log_path = tmp_path / "worker.log"
    env = {**subprocess_env, "LOG_FORMAT": "json"}
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "project",
        "--quiet",
        "worker",
        "-P",
        "solo",
        "-l",
        "info",
    ]
    with log_path.open("w") as log:
        worker = subprocess.Popen(
            [*command, "-Q", "purchases"], env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        text = read_until(log_path, " ready.")
    finally:
        stop_process(worker)
        time.sleep(0.1)

    records = json_lines(text)
    start = next(r for r in records if r["message"].startswith("worker "))
    assert start["queues"] == ["purchases"]
    assert start["concurrency"] >= 1
