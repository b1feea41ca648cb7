"""The jobs' filters, from a list's query parameters or a bulk body's `filter` object: both
become one JobFilter, and a 400 names every filter it cannot use."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rest_framework import serializers

from scheduling.jobs.services import JobError, JobFilter, check_label_name
from scheduling.rows.states import Status

PAYLOAD_SEGMENT = re.compile(r"[A-Za-z0-9_-]{1,100}")
MAX_PAYLOAD_DEPTH = 16
NOT_FILTERS = frozenset({"limit", "offset", "format"})  # pagination and format, in the list
FILTER_FORMS = "label.<name>, payload.<path> (e.g. payload.training.id), status, key, key_prefix"
FILTER_HELP = (
    "Filters: `label.<name>=<value>` (a label equals the value), `payload.<path>=<value>` "
    "(a payload field, e.g. `payload.training.id=42`; `42` matches the number or the string, "
    "`true`/`false`/`null` the JSON value or the string), `status=<run status>` (jobs with a "
    "run in that status: " + ", ".join(Status.values) + "), `key`, `key_prefix`. Repeat a "
    "filter to match any of its values; different filters must all match."
)


def parse_job_filter(params: Mapping[str, Sequence[str]]) -> JobFilter:
    """A JobFilter from query parameters; a 400 names every parameter it cannot use."""
    parts: dict[str, Any] = {"labels": {}, "payload": {}}
    errors: dict[str, list[str]] = {}
    for name, values in params.items():
        try:
            read_filter(parts, name, list(values))
        except JobError as exc:
            errors[exc.field] = [exc.message]
    if errors:
        raise serializers.ValidationError(errors)
    return JobFilter(**parts)


def parse_bulk_filter(selection: Mapping[str, Any]) -> JobFilter:
    """A bulk body's `filter` object as the list would read it; the 400 under `filter`."""
    try:
        return parse_job_filter(body_filter(selection))
    except serializers.ValidationError as exc:
        raise serializers.ValidationError({"filter": exc.detail}) from None


def read_filter(parts: dict[str, Any], name: str, values: list[str]) -> None:
    check_filter_values(name, values)
    if name.startswith("label."):
        parts["labels"][check_label_name(name.removeprefix("label."), name)] = values
    elif name.startswith("payload."):
        parts["payload"][payload_path(name)] = values
    elif name == "status":
        parts["statuses"] = statuses(values)
    elif name == "key":
        parts["keys"] = values
    elif name == "key_prefix":
        parts["key_prefix"] = values[-1]
    else:
        raise JobError(name, f"Unknown filter; accepted: {FILTER_FORMS}.")


def check_filter_values(name: str, values: list[str]) -> None:
    """An empty filter would select every job: refuse it, and text PostgreSQL cannot hold."""
    if not values or any(not value.strip() for value in values):
        raise JobError(name, "Enter a value; an empty filter would select every job.")
    if any("\x00" in value for value in values):
        raise JobError(name, "Null characters are not allowed.")
    if not all(is_utf8(value) for value in values):
        raise JobError(name, "Enter text that is valid UTF-8 (no lone surrogates).")


def is_utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def payload_path(name: str) -> tuple[str, ...]:
    path = tuple(name.split(".")[1:])
    if len(path) > MAX_PAYLOAD_DEPTH or not all(PAYLOAD_SEGMENT.fullmatch(key) for key in path):
        raise JobError(
            name,
            f"Enter payload.<key>[.<key>…], at most {MAX_PAYLOAD_DEPTH} keys of letters, "
            "digits, _ and -, e.g. payload.training.id.",
        )
    return path


def statuses(values: list[str]) -> list[str]:
    chosen = [one.strip() for value in values for one in value.split(",") if one.strip()]
    unknown = sorted(set(chosen) - set(Status.values))
    if unknown or not chosen:
        raise JobError("status", f"Enter one or more of {', '.join(Status.values)}.")
    return chosen


def body_filter(selection: Mapping[str, Any]) -> dict[str, list[str]]:
    """A bulk body's filter as query parameters: the list and the bulk select alike."""
    return {
        name: [item if isinstance(item, str) else json.dumps(item) for item in as_list(value)]
        for name, value in selection.items()
    }


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
