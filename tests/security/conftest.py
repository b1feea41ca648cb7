from collections import Counter
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from rest_framework.authtoken.models import Token

from tests.security.world import World, build_world

# Cases the schemathesis run sent, by operation and by schemathesis phase; the terminal
# summary reports the totals.
FUZZ_CASES: Counter[str] = Counter()
FUZZ_PHASES: Counter[str] = Counter()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FUZZ_CASES:
        total = sum(FUZZ_CASES.values())
        phases = ", ".join(f"{phase} {count}" for phase, count in sorted(FUZZ_PHASES.items()))
        terminalreporter.write_line(
            f"schemathesis: {total} cases over {len(FUZZ_CASES)} operations ({phases})"
        )


@pytest.fixture
def world(db: None) -> World:
    """One of everything the API serves."""
    return build_world()


@pytest.fixture
def superuser(db: None) -> User:
    return User.objects.create_superuser("root", "root@example.com", "root-password-123")


@pytest.fixture
def superuser_token(superuser: User) -> str:
    return Token.objects.create(user=superuser).key


@pytest.fixture
def wsgi_shares_the_test_connection() -> Iterator[None]:
    """For requests through the WSGI app (schemathesis), as Django's test client does: the
    request must not close the test's transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)
