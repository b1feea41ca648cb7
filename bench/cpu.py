"""CPU spent by each part of a run: this process and the children it waited for, PostgreSQL
(every backend, the exited ones included), and the Redis server; for figures per event."""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class CpuUse:
    python: float  # seconds
    postgres: float
    redis: float

    @classmethod
    def now(cls, broker: Any) -> "CpuUse":
        times = os.times()
        python = times.user + times.system + times.children_user + times.children_system
        return cls(python, postgres_seconds(), redis_seconds(broker))

    def __sub__(self, other: "CpuUse") -> "CpuUse":
        return CpuUse(
            self.python - other.python, self.postgres - other.postgres, self.redis - other.redis
        )

    def per_event_us(self, events: int) -> dict[str, float]:
        parts = {"python": self.python, "postgres": self.postgres, "redis": self.redis}
        per_event = {name: seconds / events * 1e6 for name, seconds in parts.items()}
        return {**per_event, "total": sum(per_event.values())}


def stat_fields(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def postgres_seconds() -> float:
    """Every postgres process's user + system CPU, plus what the postmaster's exited children
    (backends whose connection closed) spent: the kernel adds theirs to its own counters."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "postgres":
                continue
            fields = stat_fields(int(entry.name))
        except OSError:  # exited meanwhile
            continue
        total += sum(int(n) for n in fields[11:15]) / TICKS  # utime stime cutime cstime
    return total


def redis_seconds(client: Any) -> float:
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of these processes and their live children, from /proc."""
    total = 0.0
    for pid in set(pids) | {child for parent in pids for child in children(parent)}:
        try:
            fields = stat_fields(pid)
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def children(pid: int) -> list[int]:
    try:
        listed = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(child) for child in listed]


def machine_cpu_seconds() -> float:
    """Busy CPU seconds of the whole machine since boot, from /proc/stat: everything a run
    starts (web, beat, worker, PostgreSQL, Redis) at once. CpuUse splits it by part."""
    fields = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / TICKS


@dataclass(frozen=True)
class Proc:
    parent: int
    cpu: float  # seconds: utime + stime, and cutime + cstime (its exited, reaped children)


def process_table() -> dict[int, Proc]:
    """Every live process's parent and CPU, from /proc/<pid>/stat."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = stat_fields(int(entry.name))
        except OSError:  # exited meanwhile
            continue
        table[int(entry.name)] = Proc(int(fields[1]), sum(int(n) for n in fields[11:15]) / TICKS)
    return table


def descendants(parents: Mapping[int, int], root: int) -> set[int]:
    """The pids below `root` in the process tree that `parents` (pid: parent pid) describes."""
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def tree_cpu(table: Mapping[int, Proc], root: int) -> float:
    """CPU seconds of `root` and its descendants in `table` (process_table()). A child's
    seconds pass to its parent's cutime once reaped, so the sum never drops: read it twice
    while the tree lives, and the difference is what the tree spent in between."""
    parents = {pid: proc.parent for pid, proc in table.items()}
    pids = {root} | descendants(parents, root)
    return sum(table[pid].cpu for pid in pids if pid in table)
