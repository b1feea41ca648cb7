from django.apps import AppConfig


class RecurringConfig(AppConfig):
    """Recurring cron schedules with time zones and payload templates (optional)."""

    name = "scheduling.recurring"
    label = "scheduling_recurring"
    verbose_name = "Scheduling: recurring schedules"
    default_auto_field = "django.db.models.BigAutoField"
