"""cron_scale's figures: printed and recorded, kept for the side-by-side table of two layouts,
and the machine's state they were measured in."""

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import connection

from bench.anchors import record_against
from bench.common import record

SCENARIO = "cron_scale"
SUMMARY = "BENCH_CRON_SUMMARY"  # where a layout's run leaves its figures for the side-by-side
SETTINGS = (
    "shared_buffers",
    "autovacuum",
    "max_wal_size",
    "checkpoint_timeout",
    "wal_compression",
    "synchronous_commit",
    "maintenance_work_mem",
)

kept: dict[str, tuple[float, str]] = {}


def note(figure: str, value: float, unit: str, **extra: object) -> None:
    """Print and record one figure (with the run's layout), and keep it for the summary."""
    record(SCENARIO, figure, value, unit, layout=layout_name(), **extra)
    kept[figure] = (value, unit)


def note_against(figure: str, value: float, unit: str, **anchor: object) -> None:
    record_against(SCENARIO, figure, value, unit, layout=layout_name(), **anchor)  # type: ignore[arg-type]
    kept[figure] = (value, unit)


def layout_name() -> str:
    return os.environ.get("BENCH_CRON_LAYOUT", "plain")


@contextmanager
def phase(title: str) -> Iterator[None]:
    """Prints the phase's start and, at its end, the seconds it took."""
    started = time.perf_counter()
    print(f"  [{time.strftime('%H:%M:%S')}] {title} ...", flush=True)
    yield
    print(f"  [{time.strftime('%H:%M:%S')}] {title}: {time.perf_counter() - started:,.1f} s")


def machine() -> None:
    """The load average, the CPUs and the PostgreSQL settings the figures depend on."""
    one, five, fifteen = os.getloadavg()
    note("load average (1 min) at the end", one, "")
    print(f"  load average {one:.2f} {five:.2f} {fifteen:.2f}; {os.cpu_count()} CPUs")
    kept["CPUs"] = (float(os.cpu_count() or 0), "")
    with connection.cursor() as cursor:
        shown = []
        for name in SETTINGS:
            cursor.execute(f"SHOW {name}")
            shown.append(f"{name} = {cursor.fetchone()[0]}")
        cursor.execute("SELECT current_setting('server_version')")
        version = cursor.fetchone()[0]
    print(f"  PostgreSQL {version}: " + ", ".join(shown))


def write_summary() -> None:
    path = os.environ.get(SUMMARY)
    if path:
        Path(path).write_text(json.dumps(kept))


def side_by_side(runs: dict[str, Path]) -> None:
    """The figures of each layout's run in a column of its own, in the first run's order."""
    figures = {name: json.loads(path.read_text()) for name, path in runs.items() if path.exists()}
    if not figures:
        print("  no layout finished: nothing to compare")
        return
    names = list(figures)
    order = list(dict.fromkeys(f for found in figures.values() for f in found))
    print(f"\n  {'cron_scale, side by side':<52}" + "".join(f"{n:>16}" for n in names))
    for figure in order:
        cells = [figures[name].get(figure) for name in names]
        unit = next(cell[1] for cell in cells if cell is not None)
        shown = ["-" if cell is None else number(cell[0]) for cell in cells]
        print(f"  {figure[:52]:<52}" + "".join(f"{s:>16}" for s in shown) + f"  {unit}")


def number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3f}"
