"""What counts as a change of a recurring schedule: the fields an edit may move, and the values
they are judged on (models.py keeps a snapshot of them as a schedule loads)."""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import orjson

# Changing any of these moves the fire times or the target: the schedule is checked again.
TIMELINE_FIELDS = (
    *("cron", "timezone", "task", "queue", "starts_at", "ends_at", "enabled"),
    *("calendars", "calendar_policy"),
)
# Changing any of these (every field a person edits) bumps the version and replaces the
# pending occurrences: one created under an older version is never published.
VERSIONED_FIELDS = (
    *TIMELINE_FIELDS,
    *("name", "template_timezone", "payload_template", "misfire_policy", "max_lateness"),
    *("catchup_window", "jitter"),  # jitter moves every due time
    # Overlap, DST, counted schedules and pauses (policies.py).
    *("overlap_policy", "dst_gap_policy", "dst_repeat_policy", "max_fires", "resume_policy"),
)
JSON_FIELDS = ("payload_template", "calendars")
# The sweep's to write: a form or API save never writes them back.
SWEEP_FIELDS = ("last_fired_at", "fire_count")


PLAIN_FIELDS = tuple(name for name in VERSIONED_FIELDS if name not in JSON_FIELDS)
_plain_values = attrgetter(*PLAIN_FIELDS)


def snapshot(schedule: Any) -> dict[str, Any]:
    """The values of every versioned field, as compared() gives them (a sweep takes one for
    each schedule it reads: the plain fields in one C-level call)."""
    loaded = dict(zip(PLAIN_FIELDS, _plain_values(schedule), strict=True))
    for name in JSON_FIELDS:
        loaded[name] = compared(schedule, name)
    return loaded


def compared(schedule: Any, name: str) -> Any:
    """The value a change is judged on. JSON fields as canonical text: a payload edited in place
    must still compare as changed, and text costs a fraction of a deep copy."""
    value = getattr(schedule, name)
    if name not in JSON_FIELDS:
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:  # not JSON (set in code, refused by clean()): unlike anything loaded
        return object()
