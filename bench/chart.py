"""python -m bench chart: docs/benchmarks.png from the latest figures in bench/results.jsonl."""

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import LATENESS_SAMPLES, RESULTS

OUTPUT = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.png"


def entries() -> list[dict[str, Any]]:
    return [json.loads(line) for line in RESULTS.read_text().splitlines() if line.strip()]


def latest_drain(results: list[dict[str, Any]]) -> dict[str, float]:
    """The events/s of the latest drain run: entries within half an hour of its last one."""
    drains = [e for e in results if e["scenario"] == "drain" and e["unit"] == "events/s"]
    if not drains:
        return {}
    rows = drains[-1].get("rows")
    last = datetime.fromisoformat(drains[-1]["at"])
    rates: dict[str, float] = {}
    for entry in drains:
        recent = last - datetime.fromisoformat(entry["at"]) <= timedelta(minutes=30)
        if recent and entry.get("rows") == rows:
            rates[entry["figure"].removesuffix(" events/s")] = entry["value"]
    return rates


def latest_curves(
    results: list[dict[str, Any]],
) -> tuple[dict[int, dict[int, float]], dict[str, dict[int, float]]]:
    """{batch: {rows: events/s}} and {"p50"/"p99": {rows: seconds}}, the latest of each."""
    drains: dict[int, dict[int, float]] = {}
    late: dict[str, dict[int, float]] = {"p50": {}, "p99": {}}
    for entry in results:
        if entry["scenario"] != "curves":
            continue
        if "batch" in entry:
            drains.setdefault(entry["batch"], {})[entry["rows"]] = entry["value"]
        elif entry["figure"].startswith("lateness "):
            late[entry["figure"].split()[1]][entry["rows"]] = entry["value"]
    return drains, late


def draw() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = entries()
    drains, late = latest_curves(results)
    lateness = json.loads(LATENESS_SAMPLES.read_text()) if LATENESS_SAMPLES.exists() else []
    figure, ((left, right), (growth, delay)) = plt.subplots(2, 2, figsize=(12, 9))
    draw_drain_rates(left, latest_drain(results))
    if lateness:
        draw_lateness(right, lateness)
    draw_growth(growth, drains)
    draw_delay(delay, late)
    figure.tight_layout()
    OUTPUT.parent.mkdir(exist_ok=True)
    figure.savefig(OUTPUT, dpi=100)
    print(f"wrote {OUTPUT.relative_to(OUTPUT.parent.parent)}")


def draw_drain_rates(axes: Any, rates: dict[str, float]) -> None:
    axes.barh(
        list(rates),
        list(rates.values()),
        color=["#2b7bba", "#1f4e79", "#c0504d", "#9bbb59"][: len(rates)],
    )
    axes.set_xlabel("events/s (higher is better)")
    axes.set_title("drain: past-due rows delivered (latest run)")
    axes.invert_yaxis()


def draw_lateness(axes: Any, lateness: list[float]) -> None:
    axes.hist([value * 1000 for value in lateness], bins=60, color="#2b7bba")
    axes.set_xlabel("published - due (ms)")
    axes.set_ylabel("events (log scale)")
    axes.set_yscale("log")
    axes.set_title(f"lateness: {len(lateness):,} events, 1 sweeping worker")


def draw_growth(axes: Any, drains: dict[int, dict[int, float]]) -> None:
    for batch, by_rows in sorted(drains.items()):
        sizes = sorted(by_rows)
        axes.plot(sizes, [by_rows[n] for n in sizes], marker="o", label=f"batch {batch:,}")
    axes.set_xscale("log")
    axes.set_ylim(bottom=0)
    axes.set_xlabel("pending rows in the table (log scale)")
    axes.set_ylabel("events/s drained, one sweep")
    axes.set_title("cost as the table grows, by batch size")
    axes.legend()


def draw_delay(axes: Any, late: dict[str, dict[int, float]]) -> None:
    for name, by_rows in late.items():
        sizes = sorted(by_rows)
        axes.plot(sizes, [by_rows[n] * 1000 for n in sizes], marker="o", label=name)
    axes.set_xscale("log")
    axes.set_ylim(bottom=0)
    axes.set_xlabel("pending rows in the table (log scale)")
    axes.set_ylabel("delivered - due (ms)")
    axes.set_title("lateness: 1,000 events/s due, 1 s tick")
    axes.legend()
