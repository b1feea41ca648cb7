"""The demo's processes traced (docs/tracing.md). With OTEL_EXPORTER_OTLP_ENDPOINT (or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set, each process (web, worker, beat, `sweep --loop`)
exports its spans over OTLP, with Django, Celery, psycopg, Redis and logging instrumented;
unset, nothing is configured and the framework records nothing.

The standard OTEL_* variables apply: OTEL_SERVICE_NAME (default "scheduling-<process>"),
OTEL_EXPORTER_OTLP_PROTOCOL ("http/protobuf", the default, or "grpc" where its exporter is
installed), OTEL_TRACES_EXPORTER ("otlp", "console" or "none"), OTEL_SDK_DISABLED, the
exporter's headers and timeouts, and the batch processor's delays.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from django.core.exceptions import ImproperlyConfigured

PROTOCOLS = ("http/protobuf", "grpc")
EXPORTERS = ("otlp", "console", "none")


def wanted() -> bool:
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if exporter_name() == "none":
        return False
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    return bool(endpoint) or exporter_name() == "console"


def exporter_name() -> str:
    name = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() or "otlp"
    if name not in EXPORTERS:
        raise ImproperlyConfigured(
            f"OTEL_TRACES_EXPORTER={name!r} is not valid: expected one of {', '.join(EXPORTERS)}."
        )
    return name


def process_role(argv: list[str]) -> str:
    """web, worker, beat or sweeper: what this process is, from its command line."""
    for word in argv[1:]:
        if word in ("worker", "beat"):
            return word
        if word == "sweep":
            return "sweeper"
        if word in ("runserver", "gunicorn"):
            return "web"
    return "web" if argv and argv[0].endswith("gunicorn") else "manage"


def configure_tracing(argv: list[str] | None = None) -> bool:
    """Set the process's tracer provider and instrument its libraries; False when not wanted."""
    if not wanted():
        return False
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    role = process_role(sys.argv if argv is None else argv)
    service = os.environ.get("OTEL_SERVICE_NAME") or f"scheduling-{role}"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    # The batch processor restarts its thread in forked children (Celery's prefork pool).
    provider.add_span_processor(BatchSpanProcessor(span_exporter()))
    trace.set_tracer_provider(provider)
    instrument_libraries()
    return True


def span_exporter() -> Any:
    if exporter_name() == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
                OTLPSpanExporter as GrpcSpanExporter,
            )
        except ImportError:
            raise ImproperlyConfigured(
                "OTEL_EXPORTER_OTLP_PROTOCOL='grpc' needs the opentelemetry-exporter-otlp-proto-grpc "
                "package, which is not installed: install it, or use 'http/protobuf'."
            ) from None
        return GrpcSpanExporter()
    raise ImproperlyConfigured(
        f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not valid: expected one of "
        f"{', '.join(PROTOCOLS)}."
    )


def instrument_libraries() -> None:
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.logging import LoggingInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor

    DjangoInstrumentor().instrument()
    CeleryInstrumentor().instrument()
    PsycopgInstrumentor().instrument(enable_commenter=False)
    RedisInstrumentor().instrument()
    # Each record gets the current trace and span ids (LOG_FORMAT=json prints them as trace_id
    # and span_id); the format itself stays the project's.
    LoggingInstrumentor().instrument(set_logging_format=False)
