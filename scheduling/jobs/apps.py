from django.apps import AppConfig


class JobsConfig(AppConfig):
    """Keyed one-off jobs for services outside this codebase (optional)."""

    name = "scheduling.jobs"
    label = "scheduling_jobs"  # a host's own "jobs" app keeps its label
    verbose_name = "Scheduling: keyed jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from scheduling.jobs.models import Job, ScheduledJobRun
        from scheduling.jobs.purge import job_left_alone
        from scheduling.rows.extensions import extensions

        extensions.also_purge(Job, job_left_alone)
        extensions.add_route("jobs", "scheduling.jobs.api.JobViewSet", basename="job")
        # Job runs were a model of the `scheduling` app before this app had its own.
        extensions.former_label("scheduling.scheduledjobrun", ScheduledJobRun)
