"""A scratch database for the domain benchmarks (`python -m bench.purchases`, `bench.trainings`).

Django's test machinery creates it next to the configured database (its name prefixed with
"test_") and drops it afterwards; the configured database is never written.
"""

import os
from collections.abc import Callable

import django


def on_scratch_database(work: Callable[[], None]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    django.setup()
    from django.db import connection

    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        work()
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
