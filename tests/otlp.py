"""An OTLP/HTTP receiver for tests: what a collector would receive from the traced processes.
POST /v1/traces with a protobuf ExportTraceServiceRequest (gzipped or not); the spans kept."""

import gzip
import threading
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
                )


class Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), ExportHandler)
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
def otlp_receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
