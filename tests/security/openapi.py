"""The project's OpenAPI schema as schemathesis reads it, served through WSGI, and the path
parameters that name the world's rows."""

from typing import Any

import schemathesis
from django.core.wsgi import get_wsgi_application
from drf_spectacular.generators import SchemaGenerator

from tests.security.world import World

HTTP_METHODS = ("get", "put", "post", "patch", "delete", "head", "options", "trace")
PATH_PARAMETERS = ("id", "key", "name", "token", "model")

SCHEMA = SchemaGenerator().get_schema(request=None, public=True)
schema = schemathesis.openapi.from_dict(SCHEMA)
schema.app = get_wsgi_application()


def operations_of(document: dict[str, Any]) -> set[str]:
    """Every operation of an OpenAPI document, labelled as schemathesis labels them."""
    return {
        f"{method.upper()} {path}"
        for path, item in document["paths"].items()
        for method in item
        if method in HTTP_METHODS
    }


def resource_of(path: str) -> str:
    """`/api/teams/{id}/` -> "teams"; `/api/events/<app>/<model>/{id}/` -> "events/<app>/<model>"."""
    segments = path.split("/")[2:]
    return "/".join(segments[:3]) if segments[0] == "events" else segments[0]


def existing_rows(path: str, parameters: dict[str, Any], world: World) -> dict[str, Any]:
    """The path parameters with each one that names a row replaced by a row of the world."""
    resource = resource_of(path)
    aimed = dict(parameters)
    for name in PATH_PARAMETERS:
        if name in parameters:
            existing = world.download_token if name == "token" else world.path_value(resource)
            aimed[name] = existing or parameters[name]
    return aimed
