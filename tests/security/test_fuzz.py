"""schemathesis over every operation of /api/schema/, as a superuser with a token: no 5xx.

Bounded and reproducible for CI: per operation, schemathesis's coverage phase (boundary,
missing and wrongly typed values, derived from the schema) and a fixed number of derandomized
fuzzed examples. Every other case has its path parameters replaced by rows that exist, so the
fuzzed bodies reach the writes. Throttles are relaxed for the run: the request budgets are the
throttle tests' subject, not this one's. The terminal summary gives the case count.
"""

from dataclasses import fields
from typing import Any

import pytest
from django.core.cache import cache
from hypothesis import HealthCheck, Phase, settings
from rest_framework.test import APIClient
from schemathesis.core.result import Ok

from scheduling.rows.conf import SchedulingSettings
from tests.security.conftest import FUZZ_CASES, FUZZ_PHASES
from tests.security.openapi import SCHEMA, existing_rows, operations_of, schema
from tests.security.world import World

pytestmark = [pytest.mark.fuzz, pytest.mark.usefixtures("wsgi_shares_the_test_connection")]

MAX_EXAMPLES = 25
UNTHROTTLED = "1000000/min"


@pytest.fixture
def relaxed_throttles(settings: Any) -> None:
    """Every SCHEDULING_*_THROTTLE_RATE (read per request) out of reach; the throttles whose
    rate is fixed in code lose their history before each case (forget_throttled_requests)."""
    for each in fields(SchedulingSettings):
        if each.name.endswith("throttle_rate"):
            setattr(settings, f"SCHEDULING_{each.name.upper()}", UNTHROTTLED)


def forget_throttled_requests() -> None:
    cache.clear()  # DRF's throttles count in the default cache


def aim_at_existing_rows(case: Any, world: World) -> None:
    if FUZZ_CASES[case.operation.label] % 2 == 0 and case.path_parameters:
        case.path_parameters.update(existing_rows(case.path, case.path_parameters, world))


def test_the_fuzzed_schema_is_the_served_one(api: APIClient):
    served = api.get("/api/schema/", {"format": "json"})

    assert served.status_code == 200
    assert operations_of(served.json()) == operations_of(SCHEMA)
    parsed = {each.ok().label for each in schema.get_all_operations() if isinstance(each, Ok)}
    assert parsed == operations_of(SCHEMA)


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_no_operation_answers_a_server_error(
    case: Any, world: World, superuser_token: str, relaxed_throttles: None
):
    aim_at_existing_rows(case, world)
    FUZZ_CASES[case.operation.label] += 1
    FUZZ_PHASES[case.meta.phase.name.value] += 1
    forget_throttled_requests()
    response = case.call(headers={"Authorization": f"Token {superuser_token}"})
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} answered {response.status_code}:\n"
        f"{case.as_curl_command()}\n{response.text[:2000]}"
    )


def test_every_operation_of_the_schema_was_exercised(request: pytest.FixtureRequest):
    """Runs after the operations' tests: pytest keeps a module's order."""
    selected = {getattr(item, "operation_label", None) for item in request.session.items}
    if not operations_of(SCHEMA) <= selected:
        pytest.skip("only part of the schemathesis run was selected")
    if hasattr(request.config, "workerinput"):
        pytest.skip("pytest-xdist shares the run among its workers")

    assert set(FUZZ_CASES) == operations_of(SCHEMA)
