"""An OTLP/HTTP receiver: what a collector would receive from the traced processes (the tests'
and the bench's; docs/tracing.md). POST /v1/traces with a protobuf ExportTraceServiceRequest
(gzipped or not); the spans kept in memory, and `render` draws one trace as a tree.

    python -m bench.otlp [--port 4318]   # a sink: counts the spans it receives, every 10 s
"""

import argparse
import gzip
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    kind: int  # the protobuf's: 2 server, 4 producer, 5 consumer
    trace_id: str
    span_id: str
    parent_span_id: str
    links: tuple[tuple[str, str], ...]  # (trace id, span id)
    attributes: dict[str, Any]
    start_ns: int
    end_ns: int


def attribute_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def received(request: ExportTraceServiceRequest) -> Iterator[ReceivedSpan]:
    for resource_spans in request.resource_spans:
        resource = {a.key: attribute_value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield ReceivedSpan(
                    service=str(resource.get("service.name", "")),
                    name=span.name,
                    kind=span.kind,
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    parent_span_id=span.parent_span_id.hex(),
                    links=tuple((link.trace_id.hex(), link.span_id.hex()) for link in span.links),
                    attributes={a.key: attribute_value(a.value) for a in span.attributes},
                    start_ns=span.start_time_unix_nano,
                    end_ns=span.end_time_unix_nano,
                )


class Receiver(ThreadingHTTPServer):
    def __init__(self, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), ExportHandler)
        self.spans: list[ReceivedSpan] = []
        self.lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class ExportHandler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self.server.lock:
            self.server.spans.extend(received(request))
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@contextmanager
def otlp_receiver(port: int = 0) -> Iterator[Receiver]:
    server = Receiver(port)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def render(spans: list[ReceivedSpan], trace_id: str) -> str:
    """The spans of `trace_id`, and those linking to it, as an indented tree: each line the
    span's start after the trace's first span, its duration, service, kind and name, and where
    it links to the trace instead of belonging to it."""
    members = [s for s in spans if s.trace_id == trace_id]
    linked = [s for s in spans if s.trace_id != trace_id and trace_id in {t for t, _ in s.links}]
    origin = min(s.start_ns for s in [*members, *linked])
    children: dict[str, list[ReceivedSpan]] = {}
    for span in members:
        children.setdefault(span.parent_span_id, []).append(span)
    known = {span.span_id for span in members}
    roots = [s for s in members if s.parent_span_id not in known]
    lines: list[str] = []

    def draw(span: ReceivedSpan, depth: int, note: str = "") -> None:
        start, took = (span.start_ns - origin) / 1e9, (span.end_ns - span.start_ns) / 1e6
        lines.append(
            f"{start:9.3f} s {took:8.1f} ms  {'  ' * depth}{span.service}: "
            f"{KINDS.get(span.kind, '?')} {span.name}{note}"
        )
        for child in sorted(children.get(span.span_id, []), key=lambda s: s.start_ns):
            draw(child, depth + 1)

    for root in sorted(roots, key=lambda s: s.start_ns):
        draw(root, 0)
    for span in sorted(linked, key=lambda s: s.start_ns):
        draw(span, 0, "  (links to this trace)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=4318)
    port = parser.parse_args().port
    with otlp_receiver(port) as receiver:
        print(f"OTLP/HTTP sink on {receiver.endpoint}: export with OTEL_EXPORTER_OTLP_ENDPOINT")
        while True:
            time.sleep(10)
            with receiver.lock:
                print(f"{len(receiver.spans):,} spans received", flush=True)


if __name__ == "__main__":
    main()
