from django.apps import AppConfig, apps


class SchedulingConfig(AppConfig):
    name = "scheduling"
    verbose_name = "Scheduling"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from scheduling import celery, checks, metrics  # noqa: F401  (checks register themselves)

        celery.connect()
        metrics.quiet_idle_sweeps()
        if apps.is_installed("django.contrib.admin"):
            from scheduling.admin.dashboard import add_dashboard_url
            from scheduling.admin.defaults import register_scheduled_models
            from scheduling.admin.views import add_attention_url

            register_scheduled_models()
            add_attention_url()
            add_dashboard_url()
