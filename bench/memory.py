"""memory: peak RSS of a sweeping process that drains a backlog of 10k, then of 1M rows."""

import os
import subprocess
import sys
from pathlib import Path

from bench.common import broker, make_notification_rows, record

MANAGE = str(Path(__file__).resolve().parent.parent / "manage.py")


def peak_rss_mb(backlog: int) -> float:
    make_notification_rows(teams=10, rows_per_team=backlog // 10, due_in="-10 minutes")
    broker().flushdb()
    command = [sys.executable, MANAGE, "sweep", "trainings.ScheduledTrainingNotification"]
    sweeper = subprocess.Popen(command, env=os.environ, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(sweeper.pid, 0)
    assert status == 0, f"sweep exited with {status}"
    broker().flushdb()
    return usage.ru_maxrss / 1024


def run_memory(small: int, large: int) -> None:
    print(f"memory: peak RSS of `manage.py sweep` draining {small:,} and {large:,} rows")
    small_mb = peak_rss_mb(small)
    large_mb = peak_rss_mb(large)
    record("memory", f"peak RSS, backlog {small:,}", small_mb, "MiB")
    record("memory", f"peak RSS, backlog {large:,}", large_mb, "MiB")
    record("memory", "large / small", large_mb / small_mb, "x")
