"""schemathesis over every operation in /api/schema/, as a superuser with a token: no 5xx.

Bounded for CI: a fixed number of derandomized examples per operation. Every other case has
its path parameter replaced by a row that exists, so the fuzzed bodies reach the writes.
"""

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, Phase, settings

from tests.security.conftest import FUZZ_CASES
from tests.security.world import World

pytestmark = pytest.mark.fuzz

MAX_EXAMPLES = 25
PATH_PARAMETERS = ("id", "key", "name", "token")

schema = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
schema.app = get_wsgi_application()


@pytest.fixture(autouse=True)
def keep_the_test_connection() -> Iterator[None]:
    """As Django's test client does: the WSGI app must not close the test's transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def aim_at_existing_rows(case: Any, world: World) -> None:
    if FUZZ_CASES[case.operation.label] % 2 or not case.path_parameters:
        return
    resource = case.path.split("/")[2]
    for name in PATH_PARAMETERS:
        if name in case.path_parameters:
            existing = world.download_token if name == "token" else world.path_value(resource)
            case.path_parameters[name] = existing or case.path_parameters[name]


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_no_operation_answers_a_server_error(
    case: Any, world: World, superuser_token: str, settings: Any
):
    settings.SCHEDULING_BULK_THROTTLE_RATE = "1000000/min"  # fuzz the actions, not the throttle
    aim_at_existing_rows(case, world)
    FUZZ_CASES[case.operation.label] += 1
    response = case.call(headers={"Authorization": f"Token {superuser_token}"})
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} answered {response.status_code}:\n"
        f"{case.as_curl_command()}\n{response.text[:2000]}"
    )
