"""Where a scheduled row is in its lifecycle."""

from django.db import models


class Status(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERED = "delivered", "Delivered"
    CANCELLED = "cancelled", "Cancelled"
    EXPIRED = "expired", "Expired"
    FAILED = "failed", "Failed"


# A row's place in its lifecycle, as the admin and the API filter it: pending -> delivered
# (awaiting handling) -> handled; or cancelled, expired, failed.
LIFECYCLE_STATES = ("pending", "awaiting_handling", "handled", "failed", "expired", "cancelled")
