"""The bench's settings: the project's, plus the plain comparison endpoint (bench/plain_api)."""

from project.settings import *  # noqa: F403
from project.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench.plain_api"]
ROOT_URLCONF = "bench.urls"
