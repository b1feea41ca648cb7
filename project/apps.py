from django.apps import AppConfig


class ProjectConfig(AppConfig):
    name = "project"

    def ready(self) -> None:
        # Every process of the demo loads its apps: the web, the worker (its prefork children
        # inherit the provider), beat and `manage.py sweep --loop`.
        from project.telemetry import configure_tracing

        configure_tracing()
