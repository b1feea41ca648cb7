import subprocess
import sys
from collections.abc import Iterator

import pytest
import time_machine

from tests.conftest import CURRENT_TIME, ROOT
from tests.trainings.factories import PlayerFactory, TeamFactory
from trainings.models import Player, Team


@pytest.fixture
def frozen() -> Iterator[time_machine.Traveller]:
    with time_machine.travel(CURRENT_TIME, tick=False) as traveller:
        yield traveller


@pytest.fixture
def team() -> Team:
    return TeamFactory(name="Falcons")


@pytest.fixture
def players(team: Team) -> list[Player]:
    return PlayerFactory.create_batch(3, team=team)


@pytest.fixture
def trainings_worker(subprocess_env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """A real Celery worker consuming the trainings queue, on the shared test database."""
    log_path = ROOT / ".run" / "test-trainings-worker.log"
    log = open(log_path, "w") if log_path.parent.is_dir() else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "project",
            "worker",
            "-Q",
            "trainings",
            "-P",
            "solo",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "info",
        ],
        env=subprocess_env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    yield process
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
