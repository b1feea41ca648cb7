"""Keyed jobs' checks, selection and services: every write is one transaction."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import Q, QuerySet

from scheduling.delivery.publishing.targets import TargetError, check_callback
from scheduling.jobs.edits import apply_changes, record_changes
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.jobs.volume import (
    BUSINESS_TIME,
    check_not_long_past,
    check_owner_caps,
    take_ownership,
)
from scheduling.rows.conf import scheduling_settings
from scheduling.rows.databases import atomic_on, connection_of
from scheduling.rows.jsonvalues import JsonValueError, check_json_value
from scheduling.rows.querysets import ScheduledEventQuerySet
from scheduling.rows.states import Status
from scheduling.time.times import iso_utc, require_aware

JobError = TargetError  # the API and the admin catch one error type for every field

MAX_LABELS = 64
MAX_LABEL_VALUE = 255

KEY_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}")
LABEL_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,62}")
# The bulk actions' URLs: /api/jobs/cancel/ answers POST only, so no job can have these keys.
RESERVED_KEYS = frozenset({"cancel", "reschedule"})

KEY_FORM = "1 to 200 letters, digits and . _ : @ - (starting with a letter or digit)"
LABEL_FORM = "1 to 63 letters, digits and . _ / - (starting with a letter or digit)"


# --- limits and checks -------------------------------------------------------------------


def check_key(key: str) -> str:
    if not KEY_PATTERN.fullmatch(key):
        raise JobError("key", f"Enter a key of {KEY_FORM}; got {key[:250]!r}.")
    if key in RESERVED_KEYS:
        raise JobError("key", f"{key!r} is reserved; any other key of {KEY_FORM} is accepted.")
    return key


def check_schedules(schedules: Iterable[datetime]) -> list[datetime]:
    """The instants in UTC, in order; refuses naive, duplicate, or too many instants."""
    try:
        instants = [require_aware(value, "schedules").astimezone(UTC) for value in schedules]
    except (TypeError, ValueError, OverflowError) as exc:
        raise JobError("schedules", str(exc)) from None
    limit = scheduling_settings().job_max_instants
    if len(instants) > limit:
        raise JobError("schedules", f"At most {limit} instants per job; got {len(instants)}.")
    duplicates = sorted(iso_utc(i) for i, n in Counter(instants).items() if n > 1)
    if duplicates:
        raise JobError("schedules", f"Each instant once; repeated: {', '.join(duplicates)}.")
    return sorted(instants)


def check_payload(payload: object, where: str = "payload") -> dict[str, Any]:
    """`where`: the path the message names (callback.data.payload in a rabbitmq callback)."""
    if not isinstance(payload, dict):
        raise JobError(
            "payload", f"{where}: enter a JSON object, e.g. {{}}; got {_json_kind(payload)}."
        )
    check_json(payload, where, max_bytes=scheduling_settings().job_max_payload_bytes)
    return payload


def check_callback_and_payload(
    callback: Mapping[str, Any], payload: object | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The callback as stored, and the payload (None: not given).

    A rabbitmq callback may carry the payload as `data.payload` (MyCoach's form): the job keeps
    it as its payload, so the list filters and PATCH treat it as any other, and the callback
    keeps only the queue.
    """
    checked = check_callback(dict(callback))
    data = checked.get("data", {})
    if "payload" not in data:
        return checked, None if payload is None else check_payload(payload)
    if payload is not None:
        raise JobError(
            "payload",
            "Give the payload once: in callback.data.payload (rabbitmq callbacks) or in payload.",
        )
    try:
        return checked, check_payload(data.pop("payload"), "callback.data.payload")
    except JobError as exc:
        raise JobError("callback", exc.message) from None


def check_json(value: object, path: str, max_bytes: int | None = None) -> bytes:
    """The bytes the broker will send; a JobError for what it or PostgreSQL's jsonb refuses.
    The same rule as a recurring schedule's payload template (scheduling.rows.jsonvalues)."""
    try:
        return check_json_value(value, path=path, max_bytes=max_bytes)
    except JsonValueError as exc:
        raise JobError(path.split(".")[0], str(exc)) from None


def check_labels(labels: object) -> dict[str, str]:
    if not isinstance(labels, dict):
        raise JobError("labels", f"Enter a JSON object of strings; got {_json_kind(labels)}.")
    if len(labels) > MAX_LABELS:
        raise JobError("labels", f"At most {MAX_LABELS} labels; got {len(labels)}.")
    for name, value in labels.items():
        check_label_name(name, "labels")
        if not isinstance(value, str) or len(value) > MAX_LABEL_VALUE or "\x00" in value:
            raise JobError(
                "labels",
                f"{name}: enter a string of at most {MAX_LABEL_VALUE} characters, without NUL.",
            )
    check_json(labels, "labels")
    return labels


def check_label_name(name: str, field: str) -> str:
    if not LABEL_PATTERN.fullmatch(name):
        raise JobError(field, f"Label names are {LABEL_FORM}; got {name[:100]!r}.")
    return name


def _json_kind(value: object) -> str:
    kinds = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number")


# --- selection: the filters of the list and of the bulk actions ----------------------------


@dataclass(frozen=True)
class JobFilter:
    """Jobs by key, labels and payload fields, and (for runs) status.

    Values are text, as in a query string: "42" matches the string "42" and the number 42,
    "true" the string and the boolean. Several values of one filter match any of them; several
    filters must all match.
    """

    keys: Sequence[str] = ()
    key_prefix: str = ""
    labels: Mapping[str, Sequence[str]] = field(default_factory=dict)
    payload: Mapping[tuple[str, ...], Sequence[str]] = field(default_factory=dict)
    statuses: Sequence[str] = ()

    def jobs(self) -> QuerySet[Job]:
        jobs = Job.objects.filter(self._job_condition())
        if self.statuses:
            runs = ScheduledJobRun.objects.filter(status__in=self.statuses)
            jobs = jobs.filter(pk__in=runs.values("job"))
        return jobs

    def runs(self) -> ScheduledEventQuerySet[ScheduledJobRun]:
        # job IN (subquery) keeps the UPDATE on one table: the QuerySet's status re-check then
        # applies to each row's newest version (see ScheduledEventQuerySet._rows_for_update).
        runs = ScheduledJobRun.objects.filter(job__in=Job.objects.filter(self._job_condition()))
        return runs.filter(status__in=self.statuses) if self.statuses else runs

    def _job_condition(self) -> Q:
        condition = Q()
        if self.keys:
            condition &= Q(key__in=self.keys)
        if self.key_prefix:
            condition &= Q(key__startswith=self.key_prefix)
        for name, values in self.labels.items():
            condition &= _any_of("labels", (name,), values, as_text=True)
        for path, values in self.payload.items():
            condition &= _any_of("payload", path, values, as_text=False)
        return condition


def _any_of(column: str, path: tuple[str, ...], values: Sequence[str], *, as_text: bool) -> Q:
    candidates = [c for text in values for c in ([text] if as_text else _json_readings(text))]
    # No value matches nothing; the API refuses an empty filter before it gets here.
    return reduce(or_, (_json_equals(column, path, c) for c in candidates), Q(pk__in=[]))


def _json_readings(text: str) -> list[Any]:
    """The text itself, and the number, boolean or null it spells, if any."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return [text]
    scalar = parsed is None or isinstance(parsed, bool | int | float)
    if not scalar or (isinstance(parsed, float) and not math.isfinite(parsed)):
        return [text]
    return [text, parsed]


def _json_equals(column: str, path: tuple[str, ...], value: Any) -> Q:
    if connection_of(Job).vendor == "postgresql":
        nested = reduce(lambda inner, key: {key: inner}, reversed(path), value)
        return Q(**{f"{column}__contains": nested})  # @>, served by the GIN index
    return Q(**{"__".join((column, *path)): value})  # the embedded SQLite mode: no @>


# --- services ------------------------------------------------------------------------------


@atomic_on(Job)
def job_put(
    *,
    key: str,
    schedules: Sequence[datetime],
    callback: Mapping[str, Any],
    payload: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    owner_id: int | None = None,
) -> tuple[Job, bool]:
    """Create or replace a job; its pending runs become exactly `schedules`. True if created.

    Idempotent: an instant whose run is pending stays as it is, and an instant already
    delivered is not scheduled again, so a retried PUT publishes nothing twice. An instant whose
    run expired, failed or was cancelled was never delivered: given again, it is pending again.
    Runs no longer wanted are cancelled and kept as history. A payload or labels not given are
    empty (a rabbitmq callback may give the payload as `callback.data.payload`).
    `owner_id`: the API user writing it, whose caps apply (scheduling.jobs.volume).
    """
    checked_callback, checked_payload = check_callback_and_payload(callback, payload)
    fields = {
        "callback": checked_callback,
        "payload": {} if checked_payload is None else checked_payload,
        "labels": check_labels({} if labels is None else labels),
    }
    instants = check_schedules(schedules)
    job, created = Job.objects.select_for_update().get_or_create(
        key=check_key(key), defaults=fields
    )
    take_ownership(job, owner_id)
    check_not_long_past(job, instants)
    changed = [] if created else apply_changes(job, fields)
    if _replace_pending_runs(job, instants) and not created:
        changed.append("schedules")
    record_changes(job, changed)
    check_owner_caps(job, "schedules")
    return job, created


def _replace_pending_runs(job: Job, instants: list[datetime]) -> bool:
    """True if the job's pending runs changed."""
    # A run a sweep was publishing is delivered once the lock is ours: counted as history below.
    pending = _lock_pending_runs(job)
    # Instants as asked for (business_time): the sweep may have moved a run's due_at, e.g.
    # while its queue's backlog was full (scheduling.delivery.sweep.backlog).
    delivered = set(job.runs.filter(status=Status.DELIVERED).values_list(BUSINESS_TIME, flat=True))
    wanted = set(instants) - delivered
    kept: dict[datetime, ScheduledJobRun] = {}
    for run in pending:
        if run.business_time in wanted and run.business_time not in kept:
            kept[run.business_time] = run
    kept_ids = {run.pk for run in kept.values()}
    stale = [run.pk for run in pending if run.pk not in kept_ids]
    ScheduledJobRun.objects.filter(pk__in=stale).cancel("replaced by a PUT of the job")
    new = [ScheduledJobRun(job=job, due_at=at) for at in sorted(wanted - set(kept))]
    ScheduledJobRun.objects.bulk_create(new)
    return bool(stale or new)


def _lock_pending_runs(job: Job) -> list[ScheduledJobRun]:
    # FOR UPDATE waits for a sweep that holds one of these rows (publishing it with the job as
    # it was); once the sweep commits the row is delivered and no longer matches `pending`. In
    # pk order, like every writer that locks several runs, so two writers cannot deadlock.
    return list(job.runs.select_for_update().filter(status=Status.PENDING).order_by("pk"))


@atomic_on(Job)
def job_patch(
    *,
    key: str,
    callback: Mapping[str, Any] | None = None,
    payload: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
) -> Job:
    """Replace what is given of callback, payload and labels; pending runs publish the new ones.
    A django.tasks task's job refuses any change of them (scheduling.jobs.edits)."""
    job = Job.objects.select_for_update().get(key=key)
    _lock_pending_runs(job)  # a run being published with the old values is finished first
    values: dict[str, Any] = {}
    if callback is not None:
        values["callback"], payload = check_callback_and_payload(callback, payload)
    if payload is not None:
        values["payload"] = check_payload(payload)
    if labels is not None:
        values["labels"] = check_labels(labels)
    record_changes(job, apply_changes(job, values))
    check_owner_caps(job, "payload" if payload is not None else "labels")
    return job


@atomic_on(Job)
def job_delete(*, key: str) -> int:
    """Cancel a job's pending runs; the job and its history stay. Returns the runs cancelled."""
    job = Job.objects.select_for_update().get(key=key)
    return ScheduledJobRun.objects.filter(job=job).cancel("job deleted")


@atomic_on(Job)
def job_cancel_many(*, selection: JobFilter, reason: str = "") -> int:
    """Cancel the pending runs of the selected jobs; returns how many."""
    return _locked(selection).cancel(reason)


@atomic_on(Job)
def job_reschedule_many(
    *, selection: JobFilter, due_at: datetime | None = None, shift: timedelta | None = None
) -> int:
    """Move the pending runs of the selected jobs to `due_at`, or by `shift`; returns how many."""
    if (due_at is None) == (shift is None):
        raise TypeError("give exactly one of due_at or shift")
    runs = _locked(selection)
    field = "shift" if shift is not None else "due_at"
    try:
        if shift is not None:
            return runs.shift(shift)
        return runs.reschedule(require_aware(due_at, "due_at"))
    except ValueError as exc:  # out of the storable range: refused by the model layer
        raise JobError(field, str(exc)) from None


def _locked(selection: JobFilter) -> ScheduledEventQuerySet[ScheduledJobRun]:
    """The selection's pending runs, locked in pk order first (as PUT and PATCH lock them), so
    a bulk UPDATE walking rows in scan order cannot deadlock with them."""
    runs = selection.runs().pending().select_for_update().order_by("pk")
    return ScheduledJobRun.objects.filter(pk__in=list(runs.values_list("pk", flat=True)))
