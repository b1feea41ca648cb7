"""The logs' side: the sweep's line for each published batch, and no line for an idle tick:
the sweep task's "received" line is quieted at its source (its strategy); the "succeeded" line
of an idle tick and beat's "sending" line, which Celery logs on its own loggers with no switch
per task, are dropped by QuietIdleSweeps on those loggers. SCHEDULING_QUIET_IDLE_SWEEPS = False
turns both off: Celery's loggers are then untouched."""

from __future__ import annotations

import ast
import logging
import math
import statistics
import time
from collections.abc import Sequence
from typing import Any

from celery.worker.strategy import default as default_strategy

from scheduling.rows.conf import scheduling_settings
from scheduling.rows.models import ScheduledEvent

sweep_log = logging.getLogger("scheduling.sweep")  # the batch line belongs to the sweep's log

EVENT_IDS_IN_LOG = 20  # a published batch's log line lists its ids up to this many

BatchIds = tuple[str, str, list[str]]  # the first id, the last, and every id of a small batch


def batch_ids(rows: Sequence[ScheduledEvent]) -> BatchIds:
    every = [row.event_id for row in rows] if len(rows) <= EVENT_IDS_IN_LOG else []
    return rows[0].event_id, rows[-1].event_id, every


def log_published(
    model_label: str, lateness: list[float], ids: BatchIds, trace_id: str | None = None
) -> None:
    first, last, every = ids
    worst, middle = max(lateness), statistics.median(lateness)
    extra: dict[str, Any] = {"model": model_label, "count": len(lateness)}
    extra |= {"lateness_max_s": round(worst, 3), "lateness_p50_s": round(middle, 3)}
    extra |= {"first_event_id": first, "last_event_id": last}
    if every:
        extra["event_ids"] = every
    line = "published %d %s events (%s .. %s), lateness p50 %.3f s, max %.3f s"
    arguments: tuple[Any, ...] = (len(lateness), model_label, first, last, middle, worst)
    if trace_id:  # the batch's `send` span's, where a tracing SDK records
        extra["trace_id"] = trace_id
        line, arguments = f"{line}, trace_id %s", (*arguments, trace_id)
    sweep_log.info(line, *arguments, extra=extra)


class SweepsAlive:
    """One INFO line a minute at most per model and process, busy or idle, so that a log shows
    its sweeper alive even when nothing is due (idle ticks are otherwise silent)."""

    EVERY = 60.0  # seconds between two lines of one model

    def __init__(self) -> None:
        self.since: dict[str, tuple[float, int]] = {}  # model -> (monotonic at last line, ticks)

    def tick(self, model_label: str, duration: float) -> None:
        now = time.monotonic()
        last, ticks = self.since.get(model_label, (-math.inf, 0))
        if now - last < self.EVERY:
            self.since[model_label] = (last, ticks + 1)
            return
        self.since[model_label] = (now, 0)
        window = f"in the last {now - last:.0f} s" if math.isfinite(last) else "so far"
        sweep_log.info(
            "sweeper alive: %s swept %d times %s, the last sweep took %.3f s",
            *(model_label, ticks + 1, window, duration),
            extra={"model": model_label, "sweeps": ticks + 1},
        )


SWEEPS_ALIVE = SweepsAlive()


def sweep_strategy(task: Any, app: Any, consumer: Any, **options: Any) -> Any:
    """The sweep task's worker strategy (its `Strategy`): Celery's own, whose "Task
    scheduling.sweep[...] received" line, one per tick of every model, goes to the framework's
    `scheduling.sweep` logger at DEBUG while SCHEDULING_QUIET_IDLE_SWEEPS is on. Nothing is known
    of a tick when it arrives; what it publishes the sweep logs itself."""
    if scheduling_settings().quiet_idle_sweeps:
        options["info"] = sweep_log.debug
    return default_strategy(task, app, consumer, **options)


class QuietIdleSweeps(logging.Filter):
    """Drops Celery's INFO line about a `scheduling.sweep` tick that delivered nothing, and
    beat's line for sending each tick; every other record passes.

    A worker logs "Task ... succeeded ...: {...}" for every task: with beat ticking every model
    every second, that is lines every second on an idle system. The line is kept when the sweep
    changed a row. What a sweep publishes is logged by the sweep itself, one line per batch,
    with the event ids.
    """

    ACTIVITY = ("delivered", "expired", "failed", "retrying", "requeued")

    def __init__(self) -> None:
        super().__init__()
        self.sent: set[object] = set()  # beat's sweep entries whose first sending was logged

    def filter(self, record: logging.LogRecord) -> bool:
        context = record.args
        if record.name == "celery.beat" and isinstance(context, tuple):
            # Beat's "Sending due task <entry> (<task>)", every second for every model: the
            # first one of each entry is kept, so the log shows that beat is sending.
            if record.levelno != logging.INFO or "scheduling.sweep" not in context:
                return True
            first = context[0] not in self.sent
            self.sent.add(context[0])
            return first
        if record.levelno != logging.INFO or not isinstance(context, dict):
            return True
        if context.get("name") != "scheduling.sweep" or "return_value" not in context:
            return True
        return self._did_something(context["return_value"])

    def _did_something(self, text: object) -> bool:
        try:
            result = ast.literal_eval(str(text))
        except (ValueError, SyntaxError):
            return True  # not a result we can read: keep the line
        if not isinstance(result, dict):
            return True
        return bool(result.get("error")) or any(result.get(key) for key in self.ACTIVITY)


# Celery logs a task's end and beat's sending on its own loggers, with no switch per task.
CELERY_TICK_LOGGERS = ("celery.app.trace", "celery.beat")


def quiet_idle_sweeps() -> None:
    """From SchedulingConfig.ready() while SCHEDULING_QUIET_IDLE_SWEEPS is on: the filter on
    the two loggers where Celery reports a tick (the "received" line is the sweep task's own
    strategy's)."""
    for name in CELERY_TICK_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, QuietIdleSweeps) for f in logger.filters):
            logger.addFilter(QuietIdleSweeps())
