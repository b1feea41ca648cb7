"""memory: peak RSS of a sweeping process that drains a backlog of 10k, then of 1M rows."""

import os
import subprocess
import sys
import time
from pathlib import Path

from bench.common import broker, make_notification_rows, record

MANAGE = str(Path(__file__).resolve().parent.parent / "manage.py")


def peak_rss_mb(backlog: int) -> float:
    make_notification_rows(teams=10, rows_per_team=backlog // 10, due_in="-10 minutes")
    broker().flushdb()
    command = [sys.executable, MANAGE, "sweep", "trainings.ScheduledTrainingNotification"]
    sweeper = subprocess.Popen(command, env=os.environ, stdout=subprocess.DEVNULL)
    peak = 0
    while sweeper.poll() is None:
        peak = max(peak, high_water_kib(sweeper.pid))
        time.sleep(0.05)
    assert sweeper.returncode == 0, f"sweep exited with {sweeper.returncode}"
    broker().flushdb()
    return peak / 1024


def high_water_kib(pid: int) -> int:
    """The process's own peak RSS (VmHWM, reset by exec), unlike ru_maxrss, which keeps the
    forking parent's high-water mark across exec."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # it just exited
        return 0
    line = next((row for row in status.splitlines() if row.startswith("VmHWM:")), "VmHWM: 0 kB")
    return int(line.split()[1])


def run_memory(small: int, large: int) -> None:
    print(f"memory: peak RSS of `manage.py sweep` draining {small:,} and {large:,} rows")
    small_mb = peak_rss_mb(small)
    large_mb = peak_rss_mb(large)
    record("memory", f"peak RSS, backlog {small:,}", small_mb, "MiB")
    record("memory", f"peak RSS, backlog {large:,}", large_mb, "MiB")
    record("memory", "large / small", large_mb / small_mb, "x")
