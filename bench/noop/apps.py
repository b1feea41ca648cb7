from django.apps import AppConfig


class NoopConfig(AppConfig):
    name = "bench.noop"
    label = "bench_noop"
    default_auto_field = "django.db.models.BigAutoField"
