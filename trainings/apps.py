from django.apps import AppConfig


class TrainingsConfig(AppConfig):
    name = "trainings"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from scheduling import extensions, older_than_done_retention
        from trainings.push import get_push_backend

        get_push_backend()  # a mistyped TRAININGS_PUSH_BACKEND fails at start, not at send
        # A push's outcome matters while its event may still be retried: days, not forever.
        extensions.also_purge(self.get_model("PushResult"), older_than_done_retention)
