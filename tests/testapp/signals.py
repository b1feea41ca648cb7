"""A host's receivers of the framework's failure signals, as a worker process runs them: each
signal a line of JSON in the file TESTAPP_SIGNAL_LOG names, for a test to read."""

import json
import os
from pathlib import Path
from typing import Any

from scheduling.delivery.handling.signals import event_failed, event_gave_up
from scheduling.rows.models import ScheduledEvent


def record_signals_to(path: Path) -> None:
    def on_failed(sender: type[ScheduledEvent], row: ScheduledEvent, **kwargs: Any) -> None:
        write(path, "event_failed", row, error=kwargs["error"], will_retry=kwargs["will_retry"])

    def on_gave_up(sender: type[ScheduledEvent], row: ScheduledEvent, **kwargs: Any) -> None:
        write(path, "event_gave_up", row, error=kwargs["error"])

    # Strong references: the receivers are local functions that must live as long as the process.
    event_failed.connect(on_failed, weak=False, dispatch_uid="testapp.record_failed")
    event_gave_up.connect(on_gave_up, weak=False, dispatch_uid="testapp.record_gave_up")


def write(path: Path, signal: str, row: ScheduledEvent, **details: Any) -> None:
    line = {"signal": signal, "event": row.event_id, "status": row.status, **details}
    with path.open("a") as log:
        log.write(json.dumps(line) + "\n")


def recorded(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def configure_from_environment() -> None:
    """In a worker a test starts: record the signals, and the test model's own max attempts."""
    if log := os.environ.get("TESTAPP_SIGNAL_LOG"):
        record_signals_to(Path(log))
    if max_attempts := os.environ.get("TESTAPP_PING_MAX_ATTEMPTS"):
        from tests.testapp.models import ScheduledPing

        ScheduledPing.max_attempts = int(max_attempts)
