"""Where a scheduled row is in its lifecycle."""

from __future__ import annotations

from datetime import datetime

from django.db import models


class Status(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERED = "delivered", "Delivered"
    CANCELLED = "cancelled", "Cancelled"
    EXPIRED = "expired", "Expired"
    FAILED = "failed", "Failed"


# A row's place in its lifecycle, as the admin and the API filter it: pending -> delivered
# (awaiting handling) -> [in flight: an at-most-once effect began] -> handled; or cancelled,
# expired, failed. The status stays `delivered` through the three middle states.
LIFECYCLE_STATES = (
    "pending",
    "awaiting_handling",
    "in_flight",
    "handled",
    "failed",
    "expired",
    "cancelled",
)
LIFECYCLE_LABELS = {state: state.replace("_", " ").capitalize() for state in LIFECYCLE_STATES}


def lifecycle_state(
    status: str, handled_at: datetime | None, effect_started_at: datetime | None
) -> str:
    """The LIFECYCLE_STATES entry of a row with these columns."""
    if status != Status.DELIVERED:
        return str(status)
    if handled_at is not None:
        return "handled"
    return "awaiting_handling" if effect_started_at is None else "in_flight"
