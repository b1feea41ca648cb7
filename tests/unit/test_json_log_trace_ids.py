"""LOG_FORMAT=json, where the demo is traced (project/telemetry.py instruments logging): a line
written inside a span carries its trace_id and span_id, one written outside carries neither."""

import json
import logging

from project.logging import JsonFormatter


def formatted(**attributes: object) -> dict[str, object]:
    record = logging.makeLogRecord({"msg": "published 3 events", "levelname": "INFO"})
    record.__dict__.update(attributes)
    line: dict[str, object] = json.loads(JsonFormatter().format(record))
    return line


def test_a_line_inside_a_span_carries_its_trace_and_span_ids():
    line = formatted(
        otelTraceID="0af7651916cd43dd8448eb211c80319c",
        otelSpanID="b7ad6b7169203331",
        otelServiceName="scheduling-worker",
        otelTraceSampled=True,
    )

    assert line["trace_id"] == "0af7651916cd43dd8448eb211c80319c"
    assert line["span_id"] == "b7ad6b7169203331"
    assert not {"otelTraceID", "otelSpanID", "otelServiceName", "otelTraceSampled"} & set(line)


def test_a_line_outside_any_span_or_untraced_carries_no_ids():
    outside = formatted(otelTraceID="0", otelSpanID="0", otelServiceName="", otelTraceSampled=False)

    assert "trace_id" not in outside
    assert "trace_id" not in formatted()
