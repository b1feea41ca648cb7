"""The bench's settings: the project's, plus the plain comparison endpoint (bench/plain_api)
and the no-op scheduled models of the e2e scenario (bench/noop)."""

from project.settings import *  # noqa: F403
from project.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench.plain_api", "bench.noop"]
ROOT_URLCONF = "bench.urls"
