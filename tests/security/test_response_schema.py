"""Every read answers as the OpenAPI schema says (schemathesis's response schema check), for
rows that exist: what API clients generate from /api/schema/ parses what they get."""

from typing import Any

import pytest
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.security.openapi import SCHEMA, existing_rows, operations_of, schema
from tests.security.world import World

pytestmark = pytest.mark.usefixtures("wsgi_shares_the_test_connection")

# Answers that do not match their schema yet, and why; strict, so a fix shows here.
KNOWN_MISMATCHES: dict[str, str] = {}
READS = sorted(label for label in operations_of(SCHEMA) if label.startswith("GET "))


def expectation(label: str) -> Any:
    if label in KNOWN_MISMATCHES:
        return pytest.param(
            label, marks=pytest.mark.xfail(reason=KNOWN_MISMATCHES[label], strict=True)
        )
    return label


@pytest.mark.parametrize("label", [expectation(label) for label in READS])
def test_a_read_answers_as_its_schema_says(label: str, world: World, superuser_token: str):
    method, path = label.split(" ")
    operation = schema[path][method]
    parameters = {parameter.name: "absent" for parameter in operation.path_parameters}
    case = operation.Case(path_parameters=existing_rows(path, parameters, world))

    response = case.call(headers={"Authorization": f"Token {superuser_token}"})

    assert response.status_code == 200, response.text[:2000]
    case.validate_response(response, checks=[response_schema_conformance])
