"""cron_scale's sizes, quick or full, each overridable from the environment (BENCH_CRON_*)."""

import os
from collections.abc import Mapping
from dataclasses import dataclass

QUEUE = "bench-cron"
# beat and worker sweep the project's own models, not the bench's no-op ones
SWEEPER_SETTINGS = "bench.cron_settings"
TEMPLATE = '{"day": "${todaysDate}"}'
LAYOUTS = ("plain", "partitioned", "both")
SWEEPERS = ("celery", "daemons")
PHASES = ("window", "burst", "churn")

# (variable, full size, quick size)
COUNTS = {
    "schedules": ("BENCH_CRON_SCHEDULES", 30_000_000, 300_000),
    "seconds": ("BENCH_CRON_SECONDS", 300, 60),
    "burst": ("BENCH_CRON_BURST", 1_500_000, 50_000),
    "churn": ("BENCH_CRON_CHURN", 2_000_000, 30_000),
    "purge_budget": ("BENCH_CRON_PURGE_SECONDS", 600, 300),
}


@dataclass(frozen=True)
class Sizes:
    schedules: int
    rate: int  # occurrences falling due per second during the window
    seconds: int  # the window's length
    creates_per_minute: int
    hold: float  # SCHEDULING_SWEEP_HOLD for beat and worker
    interval: float  # SCHEDULING_SWEEP_INTERVAL for them
    hold_nap: float  # SCHEDULING_SWEEP_HOLD_NAP for them
    sweep_nice: int  # the window's beat and worker run at this `nice` (the web at 0)
    burst: int  # occurrences due in the same second
    churn: int  # deliveries a day in the churn
    purge_budget: float  # seconds the purge may walk

    @property
    def window(self) -> int:
        return self.rate * self.seconds

    @property
    def rest(self) -> int:
        """The schedules loaded in bulk: neither the window's nor the burst's."""
        return self.schedules - self.window - self.burst


def whole_number(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "")
    if not raw:
        return default
    try:
        value = int(raw.replace("_", "").replace(",", ""))
    except ValueError:
        value = -1
    if value < 0:
        raise SystemExit(f"{name} must be a whole number, such as 30000000; got {raw!r}")
    return value


def seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "")
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < 3600:
        raise SystemExit(
            f"{name} must be a number of seconds under an hour, such as 0.9; got {raw!r}"
        )
    return value


def layout(env: Mapping[str, str]) -> str:
    chosen = env.get("BENCH_CRON_LAYOUT", "plain") or "plain"
    if chosen not in LAYOUTS:
        raise SystemExit(f"BENCH_CRON_LAYOUT must be one of {', '.join(LAYOUTS)}; got {chosen!r}")
    return chosen


def burst_sweepers(env: Mapping[str, str]) -> str:
    chosen = env.get("BENCH_CRON_BURST_SWEEPERS", "celery") or "celery"
    if chosen not in SWEEPERS:
        raise SystemExit(
            f"BENCH_CRON_BURST_SWEEPERS must be one of {', '.join(SWEEPERS)}; got {chosen!r}"
        )
    return chosen


def quick_or_full(full: bool, env: Mapping[str, str] = os.environ) -> Sizes:
    # Every fire time is a whole second, so a sweep that waits for beat's next tick would make
    # them up to a second late: hold keeps a drained sweep on until the next due time. A tick
    # each 5 s, held 4.9 s, naps of up to a second: every fire is known ahead, and each tick
    # (a Celery task a model) and each wake costs the worker CPU (docs/scaling.md).
    hold = seconds(env, "BENCH_CRON_HOLD", 4.9)
    interval = seconds(env, "BENCH_CRON_INTERVAL", 5.0)
    hold_nap = seconds(env, "BENCH_CRON_HOLD_NAP", 1.0)
    counts = {
        key: whole_number(env, name, full_size if full else quick)
        for key, (name, full_size, quick) in COUNTS.items()
    }
    rate, creates = (1200, 5000) if full else (200, 1200)
    nice = whole_number(env, "BENCH_CRON_SWEEP_NICE", 0)
    sizes = Sizes(
        rate=rate,
        creates_per_minute=creates,
        hold=hold,
        interval=interval,
        hold_nap=hold_nap,
        sweep_nice=nice,
        **counts,
    )
    if sizes.rest < sizes.churn or sizes.rest < 1:
        raise SystemExit(
            f"BENCH_CRON_SCHEDULES ({sizes.schedules:,}) must exceed the window's"
            f" {sizes.window:,}, the burst's {sizes.burst:,} and the churn's {sizes.churn:,}"
        )
    return sizes


def sweeper_env(sizes: Sizes) -> dict[str, str]:
    """The window's beat and worker: the project's own models, the sizes' tick, hold and naps."""
    return {
        "DJANGO_SETTINGS_MODULE": SWEEPER_SETTINGS,
        "SCHEDULING_SWEEP_INTERVAL": str(sizes.interval),
        "SCHEDULING_SWEEP_HOLD_NAP": str(sizes.hold_nap),
    }


def phases(env: Mapping[str, str]) -> set[str]:
    raw = env.get("BENCH_CRON_PHASES", "") or ",".join(PHASES)
    chosen = {name.strip() for name in raw.split(",") if name.strip()}
    if not chosen or chosen - set(PHASES):
        raise SystemExit(
            f"BENCH_CRON_PHASES must name some of {', '.join(PHASES)}, comma-separated; got {raw!r}"
        )
    return chosen
