"""Hostile values in every query parameter of the schema answer 4xx, never 5xx: digits that
str.isdigit() takes but are not ASCII, numbers beyond 64 bits, instants beyond the calendar's
ends, NUL. Generated fuzzing meets these rarely; here each parameter meets each."""

from typing import Any
from urllib.parse import urlencode

import pytest
from rest_framework.test import APIClient

from tests.security.openapi import SCHEMA, existing_rows
from tests.security.world import World

NUMBERS = ["²", "\u0665", "\uff15", "99999999999999999999999", "-1", "1e3", " 7", "7\n", "\x00"]
INSTANTS = [
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
    "2026-02-30T00:00:00Z",
    "2026-03-29T02:30:00",
    "\x00",
]
TEXT = ["\x00", "\ufffd" * 2000, "' OR 1=1 --"]


def hostile_values(parameter: dict[str, Any]) -> list[str]:
    kind = parameter["schema"]
    if kind.get("type") in ("integer", "number"):
        return NUMBERS
    if kind.get("format") == "date-time":
        return INSTANTS
    return TEXT


def with_query_parameters() -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for path, item in SCHEMA["paths"].items():
        for method, operation in item.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query":
                    found.append((method.upper(), path, parameter))
    return found


@pytest.mark.parametrize(
    ("method", "path", "parameter"),
    with_query_parameters(),
    ids=[f"{m} {p} {q['name']}" for m, p, q in with_query_parameters()],
)
def test_a_hostile_query_value_is_refused_not_a_server_error(
    api: APIClient, world: World, method: str, path: str, parameter: dict[str, Any]
):
    names = [name.strip("{}") for name in path.split("/") if name.startswith("{")]
    url = path.format(**existing_rows(path, dict.fromkeys(names, "absent"), world))
    for value in hostile_values(parameter):
        response = api.generic(method, f"{url}?{urlencode({parameter['name']: value})}")
        assert response.status_code < 500, (parameter["name"], value, response.content[:500])
