"""Public, and kept for good (hosts' migrations name it): quiet hours for a scheduled model.

from scheduling.quiet import DailyQuietHours, QuietPolicy
"""

from scheduling.rows.quiet.hours import (
    DailyQuietHours,
    ExcludedSpans,
    QuietPolicy,
    cancelled_for_quiet_hours,
    validate_time_zone,
)

__all__ = [
    "DailyQuietHours",
    "ExcludedSpans",
    "QuietPolicy",
    "cancelled_for_quiet_hours",
    "validate_time_zone",
]
