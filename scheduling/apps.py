from django.apps import AppConfig, apps
from django.core.exceptions import ImproperlyConfigured


class SchedulingConfig(AppConfig):
    name = "scheduling"
    verbose_name = "Scheduling"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # checks register themselves; tasks are where Celery's autodiscovery no longer looks.
        from scheduling.delivery import celery, checks, metrics, tasks  # noqa: F401
        from scheduling.rows import timestamps
        from scheduling.rows.conf import SchedulingSettings, scheduling_settings

        timestamps.install()
        try:
            conf = scheduling_settings()
        except ImproperlyConfigured:
            conf = SchedulingSettings()  # the system checks name the bad setting and stop
        celery.connect()
        if conf.quiet_idle_sweeps:
            metrics.quiet_idle_sweeps()
        if apps.is_installed("django.contrib.admin"):
            from scheduling.ops.admin.sites import install_on_default_site

            install_on_default_site(conf)
