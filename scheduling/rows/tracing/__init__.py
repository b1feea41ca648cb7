"""Trace context kept with scheduled rows (docs/tracing.md): the context a row was created in is
stored beside it, so the spans that publish and handle it days later can link back to it."""
