"""LOG_FORMAT=json: one JSON object per line, for a log shipper.

With LOG_FORMAT=json `.ci/up` starts Celery with `--quiet` (no banner); the worker and beat then
log their start here as one line each, with what the banner told (queues, concurrency).

Fields: time (UTC, ISO 8601), level, logger, message, and the record's `extra` fields (the
sweep's batch line adds model, count, lateness and its event ids), and, where the demo is traced,
the trace_id and span_id of the span the line was written in. Only plain JSON values of
`extra` are kept: an object such as django.request's `request` would print its path, which may
hold a download token the message itself has had redacted.
"""

import json
import logging
from datetime import UTC, datetime
from typing import Any

from celery.signals import beat_init, celeryd_after_setup

log = logging.getLogger("celery.apps")

STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}
PLAIN = (str, int, float, bool, type(None), list, dict)
# What OpenTelemetry's logging instrumentation adds to each record where the demo is traced
# (project/telemetry.py); printed as trace_id and span_id, only inside a span.
TRACING = {"otelTraceID", "otelSpanID", "otelServiceName", "otelTraceSampled"}


def trace_ids(record: logging.LogRecord) -> dict[str, str]:
    trace_id = getattr(record, "otelTraceID", "0")
    if trace_id in ("0", "", None):
        return {}
    return {"trace_id": trace_id, "span_id": getattr(record, "otelSpanID", "")}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry |= {
            key: value
            for key, value in vars(record).items()
            if key not in STANDARD | TRACING and isinstance(value, PLAIN)
        }
        entry |= trace_ids(record)
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


@celeryd_after_setup.connect
def log_worker_start(sender: str, instance: Any, **kwargs: Any) -> None:
    queues = sorted(instance.app.amqp.queues.consume_from)
    extra = {"hostname": sender, "queues": queues, "concurrency": instance.concurrency}
    log.info("worker %s starting", sender, extra=extra)


@beat_init.connect
def log_beat_start(sender: Any, **kwargs: Any) -> None:
    entries = len(sender.get_scheduler().schedule)
    log.info("beat starting with %d schedule entries", entries, extra={"entries": entries})
