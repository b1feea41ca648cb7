"""A purchase without scheduling: the same fields and foreign keys as purchases.Purchase, and
no scheduled row. The bench's `create` scenario posts to both side by side."""

from typing import ClassVar

from django.db import models

from purchases.models import Customer, Release


class PlainPurchase(models.Model):
    class Status(models.TextChoices):
        PAID = "paid", "Paid"
        REFUNDED = "refunded", "Refunded"

    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="+")
    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PAID)
    created_at = models.DateTimeField(auto_now_add=True)

    # Declared: the app is installed only under bench.settings, where the type checker's
    # settings (tests.settings) cannot add it.
    objects: ClassVar[models.Manager["PlainPurchase"]] = models.Manager()

    class Meta:
        app_label = "bench_plain_api"
        ordering = ("-created_at", "-pk")

    def __str__(self) -> str:
        return f"#{self.pk}"
