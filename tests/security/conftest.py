from collections import Counter

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from tests.security.world import World, build_world

# Cases the schemathesis run sent, by operation; the terminal summary reports the total.
FUZZ_CASES: Counter[str] = Counter()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FUZZ_CASES:
        total = sum(FUZZ_CASES.values())
        terminalreporter.write_line(
            f"schemathesis: {total} cases over {len(FUZZ_CASES)} operations"
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
