"""Budgets per user, each at a SCHEDULING_*_THROTTLE_RATE: `bulk` (every bulk reschedule,
cancel or retry), `schedule_writes` (creating, editing, deleting and triggering recurring
schedules), `job_writes` (PUT, POST, PATCH and DELETE of keyed jobs) and `job_lists` (GET of
the keyed jobs' list)."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.throttling import UserRateThrottle

from scheduling.rows.conf import scheduling_settings


class SettingRateThrottle(UserRateThrottle):
    """Counts in the default cache (Redis), so every web process shares one budget per user."""

    rate_setting: str  # the SchedulingSettings field holding the rate

    def get_rate(self) -> str:
        # Read per request (not once at import, as DRF's class attribute is), so a changed
        # setting takes effect without a restart of the class.
        rate: str = getattr(scheduling_settings(), self.rate_setting)
        return rate


class BulkRateThrottle(SettingRateThrottle):
    scope = "bulk"
    rate_setting = "bulk_throttle_rate"


class WriteRateThrottle(SettingRateThrottle):
    """Counts writes only: reads are free."""

    def allow_request(self, request: Request, view: Any) -> bool:
        return request.method in SAFE_METHODS or super().allow_request(request, view)


class ScheduleWriteThrottle(WriteRateThrottle):
    scope = "schedule_writes"
    rate_setting = "schedule_write_throttle_rate"


class JobWriteThrottle(WriteRateThrottle):
    scope = "job_writes"
    rate_setting = "job_write_throttle_rate"


class JobListThrottle(SettingRateThrottle):
    """Counts the list's GETs only: a page may carry a hundred payloads."""

    scope = "job_lists"
    rate_setting = "job_list_throttle_rate"

    def allow_request(self, request: Request, view: Any) -> bool:
        listing = request.method == "GET" and getattr(view, "action", None) == "list"
        return not listing or super().allow_request(request, view)
