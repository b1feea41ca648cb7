"""python -m bench chart: docs/benchmarks.png from the latest figures in bench/results.jsonl."""

import json
from pathlib import Path

from bench.common import LATENESS_SAMPLES, RESULTS

OUTPUT = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.png"


def latest_drain() -> dict[str, float]:
    rates: dict[str, float] = {}
    for line in RESULTS.read_text().splitlines():
        entry = json.loads(line)
        if entry["scenario"] == "drain" and entry["unit"] == "events/s":
            rates[entry["figure"].removesuffix(" events/s")] = entry["value"]
    return rates


def draw() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = latest_drain()
    lateness = json.loads(LATENESS_SAMPLES.read_text()) if LATENESS_SAMPLES.exists() else []
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    left.barh(
        list(rates),
        list(rates.values()),
        color=["#2b7bba", "#1f4e79", "#c0504d", "#9bbb59"][: len(rates)],
    )
    left.set_xlabel("events/s (higher is better)")
    left.set_title("drain: past-due rows delivered")
    left.invert_yaxis()
    if lateness:
        right.hist([value * 1000 for value in lateness], bins=60, color="#2b7bba")
        right.set_xlabel("published - due (ms)")
        right.set_ylabel("events (log scale)")
        right.set_yscale("log")
        right.set_title(f"lateness: {len(lateness):,} events, 1 sweeping worker")
    figure.tight_layout()
    OUTPUT.parent.mkdir(exist_ok=True)
    figure.savefig(OUTPUT, dpi=110)
    print(f"wrote {OUTPUT.relative_to(OUTPUT.parent.parent)}")
