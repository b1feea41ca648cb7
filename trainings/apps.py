from django.apps import AppConfig


class TrainingsConfig(AppConfig):
    name = "trainings"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from trainings.push import get_push_backend

        get_push_backend()  # a mistyped TRAININGS_PUSH_BACKEND fails at start, not at send
