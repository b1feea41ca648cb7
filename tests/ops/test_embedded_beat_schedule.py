"""The embedded beat's schedule file (scheduling.delivery.beat): a host's own beat_schedule
entries keep their last run across restarts, the framework's are made anew at each start and
never written, a file beat cannot read (an SQLite schedule of Celery's scheduler) is replaced,
and a write that fails is logged, not fatal. The fifty real starts are in
tests/packaging/test_embedded_beat.py."""

import logging
import pickle
import shutil
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from celery import Celery

from scheduling.delivery.beat import (
    CELERY_DEFAULT_SCHEDULER,
    SCHEDULER,
    SchedulingScheduler,
    use_framework_scheduler,
)
from scheduling.rows.registry import beat_schedule

RAN = datetime(2026, 1, 1, 3, 0, tzinfo=UTC)


@pytest.fixture
def app() -> Celery:
    app = Celery("host", set_as_current=False)
    app.conf.beat_schedule = {"host report": {"task": "host.report", "schedule": 3600.0}}
    return app


def started(app: Celery, path: Path) -> SchedulingScheduler:
    """Beat's start: the scheduler, then the framework's entries (add_sweep_entries)."""
    scheduler = SchedulingScheduler(app=app, schedule_filename=str(path))
    scheduler.update_from_dict(beat_schedule())
    return scheduler


def stored_entries(path: Path) -> dict:
    with open(path, "rb") as stored:
        return pickle.loads(pickle.load(stored)[b"entries"])


def test_a_hosts_entry_keeps_its_last_run_and_the_frameworks_are_not_written(app, tmp_path):
    path = tmp_path / "celerybeat-schedule"
    first = started(app, path)
    assert "scheduling purge" in first.schedule  # the framework's entries tick
    first.schedule["host report"].last_run_at = RAN
    first.close()

    stored = stored_entries(path)
    assert "host report" in stored
    assert not set(beat_schedule()) & set(stored)
    again = started(app, path)
    assert again.schedule["host report"].last_run_at == RAN
    assert set(beat_schedule()) <= set(again.schedule)


def test_a_file_beat_cannot_read_is_replaced(app, tmp_path, caplog):
    path = tmp_path / "celerybeat-schedule"
    path.write_bytes(b"SQLite format 3\x00" + bytes(100))  # Celery's scheduler, Python 3.13

    with caplog.at_level(logging.WARNING, logger="scheduling.beat"):
        started(app, path).close()

    assert "starting a new one" in caplog.text
    assert "host report" in stored_entries(path)


def test_a_failed_write_is_logged_and_beat_goes_on(app, tmp_path, caplog):
    folder = tmp_path / "gone"
    folder.mkdir()
    scheduler = started(app, folder / "celerybeat-schedule")
    shutil.rmtree(folder)

    with caplog.at_level(logging.WARNING, logger="scheduling.beat"):
        scheduler.sync()

    assert "not written" in caplog.text
    assert "host report" in scheduler.schedule


def test_a_worker_runs_the_frameworks_scheduler_unless_the_host_chose_one():
    stock = SimpleNamespace(beat_scheduler=CELERY_DEFAULT_SCHEDULER)
    chosen = SimpleNamespace(beat_scheduler="django_celery_beat.schedulers:DatabaseScheduler")

    use_framework_scheduler(stock)
    use_framework_scheduler(chosen)

    assert stock.beat_scheduler == SCHEDULER
    assert chosen.beat_scheduler == "django_celery_beat.schedulers:DatabaseScheduler"
