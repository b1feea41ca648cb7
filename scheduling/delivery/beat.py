"""The embedded beat's scheduler and its watch: what `celery worker -B` runs with the framework.

Why a scheduler of our own. Celery's embedded beat is a process forked from the worker; its
first act is to close every inherited descriptor at the OS level (platforms.close_open_fds),
while the Python objects that own them (the parent's Redis and database connections, its event
loop, its pool's pipes) live on in the child. Celery's PersistentScheduler then opens its
schedule file through shelve, which on Python 3.13 is an SQLite database (dbm.sqlite3) holding
the lowest free numbers, the very ones those objects still believe theirs. When one of them is
closed or finalised, it closes SQLite's descriptor, and beat dies ("locking protocol", "disk
I/O error") while the worker goes on. Celery's Django fix-up does exactly that at
beat_embedded_init, closing the database connections inherited from the worker: a worker that
had queried the database before beat forked lost its beat at every start (tests/packaging/
test_embedded_beat.py).

ScheduleFile keeps the schedule in memory and touches its file only to load it at start and to
replace it whole at each sync (a temporary file, then os.replace): no descriptor lives long
enough to be closed underneath, and a sync that fails anyway is logged and tried again at the
next one instead of ending beat. The framework's own entries (the sweeps, the purge) are made
anew at every start and are never written; a host's beat_schedule entries keep their last run
times across restarts as with Celery's scheduler.

BeatWatch is a worker bootstep: a worker whose embedded beat died stops with a non-zero exit
code and a line saying so, so that a supervisor restarts it (Kubernetes-style liveness).
"""

from __future__ import annotations

import logging
import os
import pickle
import shelve
import tempfile
import threading
from pathlib import Path
from typing import Any

from celery import bootsteps
from celery.beat import PersistentScheduler
from celery.worker import state

from scheduling.rows.registry import beat_schedule

log = logging.getLogger("scheduling.beat")

CELERY_DEFAULT_SCHEDULER = "celery.beat:PersistentScheduler"
SCHEDULER = "scheduling.delivery.beat:SchedulingScheduler"
WATCH_INTERVAL = 1.0  # seconds between two looks at the embedded beat
SHUTDOWN_GRACE = 2.0  # seconds a dead beat is given to turn out to be part of a shutdown
EXIT_BEAT_DIED = 1


ENTRIES = b"entries"  # the shelf's key (shelve encodes keys) of PersistentScheduler's entries


class ScheduleFile(dict[bytes, bytes]):
    """The shelf's storage (keys and pickled values, as shelve writes them): loaded from `path`
    once, written whole at each sync (the shelf's sync and close call it)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = Path(path)
        self.update(self._load())

    def _load(self) -> dict[bytes, bytes]:
        try:
            with open(self.path, "rb") as source:
                stored = pickle.load(source)
        except FileNotFoundError:
            return {}
        except Exception as exc:  # an older Celery's dbm file, a truncated write: start anew
            log.warning("beat: schedule file %s not read (%r); starting a new one", self.path, exc)
            return {}
        return stored if isinstance(stored, dict) else {}

    def sync(self) -> None:
        kept = {key: value for key, value in self.items() if key != ENTRIES}
        if ENTRIES in self:
            kept[ENTRIES] = own_entries(self[ENTRIES])
        try:
            write_whole(self.path, pickle.dumps(kept, pickle.HIGHEST_PROTOCOL))
        except OSError as exc:
            log.warning(
                "beat: schedule file %s not written (%r); next sync retries", self.path, exc
            )


def own_entries(pickled: bytes) -> bytes:
    """The shelf's pickled entries less the framework's: those are made anew at each start."""
    framework = beat_schedule().keys()
    entries = pickle.loads(pickled)
    hosts = {name: entry for name, entry in entries.items() if name not in framework}
    return pickle.dumps(hosts, pickle.HIGHEST_PROTOCOL)


def write_whole(path: Path, data: bytes) -> None:
    """A reader finds the old file or the new one, never half of one."""
    handle, temporary = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as target:
            target.write(data)
        os.replace(temporary, path)
    except OSError:
        Path(temporary).unlink(missing_ok=True)
        raise


class SchedulingScheduler(PersistentScheduler):
    """Celery's PersistentScheduler (the same entries, time zone checks and syncs) over a
    ScheduleFile instead of shelve's dbm: the module docstring says why."""

    schedule_filename: str  # set by PersistentScheduler's __init__

    def _open_schedule(self) -> shelve.Shelf[Any]:
        return shelve.Shelf(ScheduleFile(self.schedule_filename), writeback=True)


def use_framework_scheduler(conf: Any) -> None:
    """A worker's embedded beat (celeryd_init, before the worker reads `beat_scheduler`) runs
    SchedulingScheduler unless the host chose a scheduler of its own."""
    if conf.beat_scheduler == CELERY_DEFAULT_SCHEDULER:
        conf.beat_scheduler = SCHEDULER


class BeatWatch(bootsteps.StartStopStep):
    """With -B: a thread that looks at the embedded beat every WATCH_INTERVAL and stops the
    worker with exit code EXIT_BEAT_DIED when beat has died outside a shutdown."""

    label = "BeatWatch"
    requires = ("celery.worker.components:Beat",)
    conditional = True

    def __init__(self, worker: Any, beat: bool = False, **kwargs: Any) -> None:
        self.enabled = bool(beat)
        self.stopping = threading.Event()
        super().__init__(worker, **kwargs)

    def start(self, worker: Any) -> None:
        beat = worker.beat
        if beat is None:
            return
        pid = getattr(beat, "pid", None)
        where = f"process {pid}" if pid else "a thread"
        log.info("embedded beat runs in %s; the worker stops if it dies", where)
        watcher = threading.Thread(target=self.watch, args=(beat,), name="BeatWatch", daemon=True)
        watcher.start()

    def stop(self, worker: Any) -> None:
        self.stopping.set()

    def watch(self, beat: Any) -> None:
        while not self.stopping.wait(WATCH_INTERVAL):
            if not beat.is_alive():
                break
        if self.stopping.wait(SHUTDOWN_GRACE) or shutting_down():
            return
        log.critical(
            "embedded beat (process %s) died (exit code %s): no sweep is sent any more; "
            "stopping the worker",
            getattr(beat, "pid", "-"),
            getattr(beat, "exitcode", None),
        )
        # Read by the worker's loop (state.maybe_shutdown): a warm shutdown with this exit code.
        state.should_stop = EXIT_BEAT_DIED  # type: ignore[assignment]


def shutting_down() -> bool:
    """The worker was told to stop (a warm or cold shutdown takes beat down with it)."""
    return state.should_stop is not None or state.should_terminate is not None


def watch_embedded_beat(app: Any) -> None:
    if BeatWatch not in app.steps["worker"]:
        app.steps["worker"].add(BeatWatch)
