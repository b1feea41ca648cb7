"""What the modules below models.py read of a schedule and of an occurrence: the attributes
and methods they use, as protocols. models.py imports those modules (its save() and the
sweep's hooks call them), so they take the schedule, the occurrence and their model classes
as arguments and never import models.py back."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Protocol


class Schedule(Protocol):
    """A RecurringSchedule (models.py), as validation, the policies, the calendars, the
    timeline and the chain read it."""

    pk: Any
    name: str
    cron: str
    timezone: str
    template_timezone: str
    task: str
    queue: str
    payload_template: Any
    enabled: bool
    misfire_policy: str
    max_lateness: timedelta | None
    catchup_window: timedelta
    jitter: int
    starts_at: datetime
    ends_at: datetime | None
    version: int
    last_fired_at: datetime | None
    calendars: Any
    calendar_policy: str
    overlap_policy: str
    dst_gap_policy: str
    dst_repeat_policy: str
    max_fires: int | None
    fire_count: int
    paused_note: str
    paused_at: datetime | None
    paused_by: str
    resume_policy: str
    occurrences: Any  # its ScheduledOccurrence rows' related manager

    def next_fire_after(self, after: datetime) -> datetime | None: ...

    def cron_fire_after(self, after: datetime) -> datetime | None: ...


class Occurrence(Protocol):
    """A ScheduledOccurrence (models.py), as the chain and the overlap policies read it."""

    pk: Any
    schedule_id: int
    schedule: Any  # its RecurringSchedule, a Schedule
    schedule_version: int
    due_at: datetime
    business_due_at: datetime | None
    status: str
    attempts: int
    manual: bool
    catch_up: bool
    missed_run: int

    def is_stale(self, schedule: Any = None) -> bool: ...  # given its schedule, if read already
