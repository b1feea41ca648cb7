"""cron_scale's beat and worker: the project's own scheduled models, as a deployment of it has.
bench.settings adds the e2e scenario's no-op models, whose idle sweeps (a task a tick each, and
a held process each) a deployment would not run; the web keeps bench.settings."""

from bench.settings import *  # noqa: F403
from bench.settings import INSTALLED_APPS

BENCH_ONLY_APPS = ("bench.noop",)
INSTALLED_APPS = [app for app in INSTALLED_APPS if app not in BENCH_ONLY_APPS]
