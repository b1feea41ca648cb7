"""The unit tier: tests that need no service, and pass with PostgreSQL and Redis unreachable
(`.ci/fast tests/unit` runs them without starting either). A test here that asks for the
database, Redis or a child process fails at collection: it belongs to the integration tier."""

import pytest

from tests.conftest import TIER_FOLDERS, fixtures_of

SERVICE_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_setup",
    "live_server",
    "broker",
    "subprocess_env",
    "admin_user",
    "api",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not item.path.is_relative_to(TIER_FOLDERS["unit"]):
            continue
        needs = SERVICE_FIXTURES & fixtures_of(item)
        if needs or item.get_closest_marker("django_db"):
            raise pytest.UsageError(
                f"{item.nodeid} needs {sorted(needs) or 'the database'}: "
                "a unit test may use no service (move it out of tests/unit)"
            )
