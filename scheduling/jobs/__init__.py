"""Keyed one-off jobs, an optional app ("scheduling.jobs"): a job posted over HTTP (or enqueued
through django.tasks, backends/) is a scheduled row, delivered by the core as any other; its
models, services, admin, REST API and migrations. It may import every wing; no wing imports it."""
