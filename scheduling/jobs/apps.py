from django.apps import AppConfig


class JobsConfig(AppConfig):
    """Keyed one-off jobs for services outside this codebase (optional)."""

    name = "scheduling.jobs"
    label = "scheduling_jobs"  # a host's own "jobs" app keeps its label
    verbose_name = "Scheduling: keyed jobs"
    default_auto_field = "django.db.models.BigAutoField"
