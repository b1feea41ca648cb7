from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured


class PurchasesConfig(AppConfig):
    name = "purchases"
    verbose_name = "Purchases"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        check_email_backend()  # a mistyped backend or mail folder fails at start, not at send


def check_email_backend() -> None:
    from django.conf import settings
    from django.core.mail import get_connection

    try:
        get_connection()  # the file backend creates and checks its folder here
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"EMAIL_BACKEND={settings.EMAIL_BACKEND!r} is not valid: expected a dotted class "
            f"path such as django.core.mail.backends.smtp.EmailBackend ({exc})."
        ) from None
    except ImproperlyConfigured as exc:
        if not settings.EMAIL_BACKEND.endswith("filebased.EmailBackend"):
            raise
        raise ImproperlyConfigured(
            f"EMAIL_FILE_PATH={getattr(settings, 'EMAIL_FILE_PATH', None)!r} is not valid: "
            f"expected a writable directory ({exc})."
        ) from None
