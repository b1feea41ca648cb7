from django.apps import AppConfig


class PurchasesConfig(AppConfig):
    name = "purchases"
    verbose_name = "Purchases"
    default_auto_field = "django.db.models.BigAutoField"
