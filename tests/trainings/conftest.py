import os
import subprocess
from collections.abc import Iterator

import pytest
import time_machine

from tests.conftest import CURRENT_TIME, start_worker, stop_process
from tests.trainings.factories import PlayerFactory, TeamFactory
from trainings.models import Player, Team


@pytest.fixture
def frozen() -> Iterator[time_machine.Traveller]:
    with time_machine.travel(CURRENT_TIME, tick=False) as traveller:
        yield traveller


@pytest.fixture
def team() -> Team:
    created: Team = TeamFactory.create(name="Falcons")
    return created


@pytest.fixture
def players(team: Team) -> list[Player]:
    return PlayerFactory.create_batch(3, team=team)


@pytest.fixture
def trainings_worker(subprocess_env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """A real Celery worker consuming the trainings queue, on the shared test database."""
    process = start_worker(subprocess_env, "trainings", WORKER_LOG)
    yield process
    stop_process(process)


# Per test run: concurrent runs on one machine each have their own Redis pair, and log.
WORKER_LOG = f"trainings-worker-{os.environ['TEST_REDIS_PAIR']}"
