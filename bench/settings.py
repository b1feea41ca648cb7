"""The bench's settings: the project's, plus the plain comparison endpoint (bench/plain_api)
and the no-op scheduled models of the e2e scenario (bench/noop)."""

from project.settings import *  # noqa: F403
from project.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench.plain_api", "bench.noop"]
ROOT_URLCONF = "bench.urls"

# The bench's plain-JSON queues have no consumer: it reads every message back from the broker
# to measure lateness, so the sweep's bound on a queue's backlog (10,000 by default) would hold
# a burst back. The bound's own behaviour is tested in tests/scheduling/delivery.
SCHEDULING_QUEUE_TARGET_MAX_BACKLOG = 10_000_000
