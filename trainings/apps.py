from django.apps import AppConfig


class TrainingsConfig(AppConfig):
    name = "trainings"
    default_auto_field = "django.db.models.BigAutoField"
