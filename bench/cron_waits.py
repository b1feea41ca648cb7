"""Where the window's database sessions wait: pg_stat_activity sampled ten times a second while
the window runs, each active session counted under its wait event (or "on CPU" when it has
none). A creation that waits shows here as a lock (Lock:*), the WAL's flush (LWLock:WALWrite,
IO:WALSync) or the disk. The web's sessions are told from the sweep's by their application
name (PGAPPNAME, which bench/create.py's gunicorn and bench/lateness.py's celery set)."""

import threading
from collections import Counter

import psycopg
from django.db import connection

SAMPLE_EVERY = 0.1  # seconds
ACTIVE = """
SELECT COALESCE(wait_event_type || ':' || wait_event, 'on CPU'), application_name
FROM pg_stat_activity
WHERE state = 'active' AND backend_type = 'client backend' AND pid <> pg_backend_pid()
"""


def who(application: str) -> str:
    return {"bench-web": "web", "bench-sweep": "sweep"}.get(application, "other")


class WaitSampler:
    """Counts (who, wait) of active sessions from start() to stop()."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        params = connection.get_connection_params()
        with psycopg.connect(**params, autocommit=True) as own:
            while not self._stop.wait(SAMPLE_EVERY):
                self.samples += 1
                for wait, application in own.execute(ACTIVE).fetchall():
                    self.counts[(who(application or ""), wait)] += 1

    def report(self) -> list[str]:
        """One line per (who, wait), the most seen first: how many samples found a session of
        that kind in that state, and the share of that kind's samples."""
        totals: Counter[str] = Counter()
        for (kind, _), count in self.counts.items():
            totals[kind] += count
        return [
            f"{kind:>5} {wait:<28} {count:>6} samples ({count / totals[kind]:.0%} of {kind}'s)"
            for (kind, wait), count in self.counts.most_common(12)
        ]
