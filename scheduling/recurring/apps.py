from django.apps import AppConfig


class RecurringConfig(AppConfig):
    """Recurring cron schedules with time zones and payload templates (optional)."""

    name = "scheduling.recurring"
    label = "scheduling_recurring"
    verbose_name = "Scheduling: recurring schedules"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from scheduling.recurring.models import ScheduledOccurrence
        from scheduling.recurring.purge import latest_fire, latest_fire_in_partition
        from scheduling.rows.extensions import extensions

        extensions.keep(ScheduledOccurrence, latest_fire, in_partition=latest_fire_in_partition)
        extensions.add_route(
            "schedules", "scheduling.recurring.api.ScheduleViewSet", basename="schedule"
        )
        # Occurrences were a model of the `scheduling` app before this app had its own.
        extensions.former_label("scheduling.scheduledoccurrence", ScheduledOccurrence)
        connect_calendars()


def connect_calendars() -> None:
    """Schedules name calendars: deleting or renaming one they use is refused, and editing
    one recomputes their pending fire times."""
    from django.db.models.signals import post_save

    from scheduling.recurring.calendar_replan import replan_on_save, schedules_using
    from scheduling.time.calendars.models import Calendar
    from scheduling.time.calendars.references import calendar_users

    calendar_users.add(
        schedules_using, permission="scheduling_recurring.view_recurringschedule", noun="schedule"
    )
    post_save.connect(replan_on_save, sender=Calendar, dispatch_uid="recurring-calendar-replan")
