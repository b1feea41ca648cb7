from django.apps import AppConfig


class PlainApiConfig(AppConfig):
    name = "bench.plain_api"
    label = "bench_plain_api"
    default_auto_field = "django.db.models.BigAutoField"
