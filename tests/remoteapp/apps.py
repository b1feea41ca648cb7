from django.apps import AppConfig


class RemoteappConfig(AppConfig):
    name = "tests.remoteapp"
    label = "remoteapp"
    default_auto_field = "django.db.models.BigAutoField"
