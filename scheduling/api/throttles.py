"""The `bulk` throttle: every bulk reschedule or cancel, per user, at SCHEDULING_BULK_THROTTLE_RATE."""

from __future__ import annotations

from rest_framework.throttling import UserRateThrottle

from scheduling.conf import scheduling_settings


class BulkRateThrottle(UserRateThrottle):
    """Counts in the default cache (Redis), so every web process shares one budget per user."""

    scope = "bulk"

    def get_rate(self) -> str:
        # Read per request (not once at import, as DRF's class attribute is), so a changed
        # setting takes effect without a restart of the class.
        return scheduling_settings().bulk_throttle_rate
