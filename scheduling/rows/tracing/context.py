"""Trace context at the rows' end: the `create` span a row is scheduled in and its stored context,
span events for moves and cancels, the trace id history entries keep.

The framework depends on opentelemetry-api alone. With no SDK configured (`tracing_on()` false)
nothing is started, written or read: scheduling and sweeping cost what they did.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.db import models
from opentelemetry import trace
from opentelemetry.trace import Link, SpanContext, SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from scheduling.rows.databases import database_of
from scheduling.rows.tracing.models import CreationContext

# The W3C format whatever propagators the host configured: what is stored must read back.
W3C = TraceContextTextMapPropagator()
SYSTEM = "scheduling"

Carrier = dict[str, str]

# The context new rows take instead of a `create` span of their own (recurring occurrences take
# their schedule's last create or edit).
_given: ContextVar[Carrier | None] = ContextVar("scheduling_creation_context", default=None)


def tracer() -> trace.Tracer:
    # Not kept: a proxy tracer stays bound to the first provider it met (tests set and reset one).
    return trace.get_tracer("scheduling")


def tracing_on() -> bool:
    """Whether a tracing SDK records in this process (a provider was set)."""
    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


def carrier_of(span: trace.Span) -> Carrier:
    carrier: Carrier = {}
    W3C.inject(carrier, context=trace.set_span_in_context(span))
    return carrier


def span_context_of(carrier: Carrier) -> SpanContext | None:
    context = trace.get_current_span(W3C.extract(carrier)).get_span_context()
    return context if context.is_valid else None


def current_trace_id() -> str | None:
    """The current span's trace id (32 hex digits), for history entries and log lines."""
    context = trace.get_current_span().get_span_context()
    return trace.format_trace_id(context.trace_id) if context.is_valid else None


@contextmanager
def created_under(carrier: Carrier | None) -> Iterator[None]:
    """Rows created inside take `carrier` as their creation context (None: no context)."""
    token = _given.set(carrier)
    try:
        yield
    finally:
        _given.reset(token)


@contextmanager
def creation(model: type[models.Model]) -> Iterator[Carrier | None]:
    """Around the insert of new rows of `model`: the context to keep with them. A `create` span
    (PRODUCER) where an SDK records, the context `created_under` gives, or None."""
    if (given := _given.get()) is not None:
        yield given
        return
    if not tracing_on():
        yield None
        return
    attributes = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "create",
        "messaging.operation.name": "create",
        "messaging.destination.name": queue_of(model),
        "scheduling.model": model._meta.label_lower,
    }
    name = f"create {queue_of(model)}"
    with tracer().start_as_current_span(
        name, kind=SpanKind.PRODUCER, attributes=attributes
    ) as span:
        yield carrier_of(span)


def keep(
    model: type[models.Model], pks: Sequence[Any], carrier: Carrier | None, using: str
) -> None:
    """Store `carrier` as the creation context of the rows `pks` (none where carrier is None)."""
    if carrier is None or not pks:
        return
    label = model._meta.label_lower
    CreationContext.objects.using(using).bulk_create(
        [
            CreationContext(
                model=label,
                row_id=pk,
                traceparent=carrier["traceparent"],
                tracestate=carrier.get("tracestate", "")[:512],
            )
            for pk in pks
            if pk is not None
        ],
        update_conflicts=True,
        unique_fields=["model", "row_id"],
        update_fields=["traceparent", "tracestate"],
    )


@contextmanager
def traced_insert(model: type[models.Model]) -> Iterator[Callable[[Sequence[Any]], None]]:
    """For rows of `model` inserted without the ORM (raw SQL): wrap the insert, then call what
    this yields with the new rows' pks. They keep their creation context, as rows made by
    save() and bulk_create() do; nothing happens while no tracing SDK records.

        with traced_insert(ScheduledPurchase) as keep_context:
            pks = insert_rows_in_sql()
            keep_context(pks)
    """
    with creation(model) as carrier:
        yield lambda pks: keep(model, pks, carrier, using=database_of(model))


def stored_carriers(label: str, pks: Collection[Any], using: str) -> dict[Any, Carrier]:
    """The stored creation contexts of rows of the model `label`, by pk."""
    if not pks:
        return {}
    found = CreationContext.objects.using(using).filter(model=label, row_id__in=list(pks))
    return {
        row_id: {"traceparent": traceparent, "tracestate": tracestate}
        if tracestate
        else {"traceparent": traceparent}
        for row_id, traceparent, tracestate in found.values_list(
            "row_id", "traceparent", "tracestate"
        )
    }


def links_to(carriers: dict[Any, Carrier]) -> list[Link]:
    """A link to each creation context (SDKs keep the first 128 of a span by default)."""
    links = []
    for pk, carrier in carriers.items():
        if (context := span_context_of(carrier)) is not None:
            links.append(Link(context, {"scheduling.pk": str(pk)}))
    return links


def note_change(model: type[models.Model], kind: str, count: int) -> None:
    """A reschedule, cancel or retry of rows, as an event on the current span (the rows keep
    their creation context)."""
    span = trace.get_current_span()
    if span.is_recording():
        span.add_event(
            f"scheduling.{kind}",
            {"scheduling.model": model._meta.label_lower, "scheduling.rows": count},
        )


def queue_of(model: type[models.Model]) -> str:
    get_queue = getattr(model, "get_queue", None)
    return get_queue() if get_queue is not None else model._meta.app_label
