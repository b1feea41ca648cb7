"""A scheduled row's timeline as the admin's change page shows it: one line per entry, its
detail in words ("sent 3 days late" against the business time, "due 09:00 -> 10:00", the
error)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.utils import formats, timezone

from scheduling.ops.admin.wording import lateness, short_duration
from scheduling.ops.api.routes import history_url
from scheduling.rows.conf import scheduling_settings
from scheduling.rows.history.models import Kind
from scheduling.rows.history.timeline import Entry, timeline_count, timeline_page

# How each kind's lateness against the business time reads.
LATE_VERBS = {
    Kind.PUBLISHED: "sent",
    Kind.HANDLED: "handled",
    Kind.RETRIED: "retried",
    Kind.EXPIRED: "expired",
}
SHOWN_ELSEWHERE = {"error_type", "stage", "before", "how", "business_due_at", "trace_id"}


TIME_FORMAT = "Y-m-d H:i:s T"
TIMELINE_SHOWN = 50  # the latest entries on a row's change page; the REST history has the rest  # to the second: entries are often seconds apart


@dataclass(frozen=True)
class TimelineLine:
    when: str
    kind: str
    label: str
    attempt: int
    version: int
    actor: str
    details: list[str]
    trace_id: str = ""  # the span the entry was written in (docs/tracing.md)
    trace_url: str = ""  # where SCHEDULING_TRACE_URL shows that trace


@dataclass(frozen=True)
class LatestLines:
    lines: list[TimelineLine]  # the latest TIMELINE_SHOWN entries, oldest first
    count: int  # entries in the whole timeline
    rest_url: str | None  # the whole timeline, a page at a time (the REST history)


def timeline_lines(row: Any) -> LatestLines:
    """The latest entries of `row`'s timeline (oldest first), each with its detail in words:
    a row with 200,000 entries is a page, not the whole story."""
    count = timeline_count(row)
    start = max(count - TIMELINE_SHOWN, 0)
    latest = timeline_page(row, offset=start, limit=TIMELINE_SHOWN)
    return LatestLines([line_of(entry) for entry in latest], count, history_url(row, None, None))


def line_of(entry: Entry) -> TimelineLine:
    label = Kind(entry.kind).label if entry.kind in Kind.values else entry.kind
    trace_id = str(entry.detail.get("trace_id") or "")
    return TimelineLine(
        when(entry.at),
        entry.kind,
        label,
        entry.attempt,
        entry.version,
        entry.actor,
        details(entry),
        trace_id,
        trace_url(trace_id),
    )


def trace_url(trace_id: str) -> str:
    template = scheduling_settings().trace_url
    return template.replace("{trace_id}", trace_id) if template and trace_id else ""


def details(entry: Entry) -> list[str]:
    detail = entry.detail
    words = [
        DESCRIBE.get(key, _as_is)(entry, key, value)
        for key, value in detail.items()
        if key not in SHOWN_ELSEWHERE and value not in (None, "")
    ]
    return [word for word in words if word]


def _error(entry: Entry, key: str, value: Any) -> str:
    where = "publishing: " if entry.detail.get("stage") == "publish" else ""
    kind = entry.detail.get("error_type")
    return f"{where}{kind}: {value}" if kind else f"{where}{value}"


def _move(entry: Entry, key: str, value: Any) -> str:
    how = str(entry.detail.get("how", "")).replace("_", " ")
    moved = f"due {when(entry.detail.get('before'))} -> {when(value)}"
    return f"{moved} ({how})" if how else moved


def _late(entry: Entry, key: str, value: Any) -> str:
    verb = LATE_VERBS.get(Kind(entry.kind), "") if entry.kind in Kind.values else ""
    if not verb:
        return ""
    if entry.kind == Kind.EXPIRED:
        return f"expired {short_duration(timedelta(seconds=float(value)))} after its due time"
    return lateness(verb, float(value))


def _from(entry: Entry, key: str, value: Any) -> str:
    business = entry.detail.get("business_due_at")
    return f"from {value}, business time {when(business)}" if business else f"from {value}"


def _labelled(label: str) -> Callable[[Entry, str, Any], str]:
    return lambda entry, key, value: f"{label} {when(value)}"


def _as_is(entry: Entry, key: str, value: Any) -> str:
    return f"{key.replace('_', ' ')}: {value}"


DESCRIBE: dict[str, Callable[[Entry, str, Any], str]] = {
    "error": _error,
    "after": _move,
    "late_by_seconds": _late,
    "from": _from,
    "reason": lambda entry, key, value: str(value),
    "retry_at": _labelled("next try at"),
    "due_at": _labelled("due at"),
    "expires_at": _labelled("expiring at"),
    "max_lateness_seconds": lambda entry, key, value: (
        "max lateness " + short_duration(timedelta(seconds=float(value)))
    ),
}


def when(value: Any) -> str:
    """A time (an entry's, or ISO in its detail) in the current time zone, to the second."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
    if not isinstance(value, datetime):
        return str(value)
    if timezone.is_aware(value):
        value = timezone.localtime(value)
    return formats.date_format(value, TIME_FORMAT)
