"""The jobs API's fields: each runs its value through a check of scheduling.jobs, whose
JobError becomes the field's 400."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from scheduling.delivery.publishing.targets import check_callback
from scheduling.jobs.services import (
    KEY_FORM,
    JobError,
    check_key,
    check_labels,
    check_payload,
    check_schedules,
)
from scheduling.ops.api.serializers import BoundedJSONField, StrictDateTimeField
from scheduling.time.parsing import DATETIME_EXAMPLE

T = TypeVar("T")

QUEUE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$"
CALLBACK_SCHEMA = {
    "oneOf": [
        {
            "type": "object",
            "title": "Queue callback",
            "description": "Plain JSON on the named queue: a Redis list or a durable RabbitMQ "
            "queue, for a consumer in any language.",
            "properties": {
                "type": {"type": "string", "enum": ["queue"]},
                "queue": {"type": "string", "pattern": QUEUE_NAME},
            },
            "required": ["type", "queue"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "title": "Task callback",
            "description": "A Celery task message; the queue defaults to the task's route. The "
            "task must be registered in this project's Celery app, or declared external in "
            "SCHEDULING_EXTERNAL_TASKS.",
            "properties": {
                "type": {"type": "string", "enum": ["task"]},
                "task": {"type": "string", "example": "billing.tasks.charge"},
                "queue": {"type": "string"},
            },
            "required": ["type", "task"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "title": "RabbitMQ callback",
            "description": "The payload alone is the message body (JSON), on the named queue of "
            "the configured broker (a durable RabbitMQ queue, or the Redis list of that name). "
            "`data.payload` is the job's payload; answers show it as `payload`.",
            "properties": {
                "type": {"type": "string", "enum": ["rabbitmq"]},
                "data": {
                    "type": "object",
                    "properties": {
                        "queue": {"type": "string", "pattern": QUEUE_NAME},
                        "payload": {"type": "object", "additionalProperties": True},
                    },
                    "required": ["queue"],
                    "additionalProperties": False,
                },
            },
            "required": ["type", "data"],
            "additionalProperties": False,
        },
    ],
    "example": {"type": "queue", "queue": "reminders"},
}


def checked(check: Callable[[Any], T], value: Any) -> T:
    """Run a check from scheduling.jobs as a field validation."""
    try:
        return check(value)
    except JobError as exc:
        raise serializers.ValidationError(exc.message) from None


@extend_schema_field(CALLBACK_SCHEMA)
class CallbackField(BoundedJSONField):
    def to_internal_value(self, data: Any) -> Any:
        # Over HTTP a task must be one this project knows (or declared external): a typo would
        # otherwise wait, unseen, for a worker that never comes.
        return checked(partial(check_callback, known_task=True), super().to_internal_value(data))


class KeyField(serializers.CharField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(trim_whitespace=False, help_text=f"The job's key: {KEY_FORM}.", **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):  # not even a number: keys are text
            raise serializers.ValidationError(f"Enter a key of {KEY_FORM}; got {data!r:.100}.")
        return checked(check_key, super().to_internal_value(data))


@extend_schema_field({"type": "object", "additionalProperties": True, "example": {"a": 1}})
class PayloadField(BoundedJSONField):
    def to_internal_value(self, data: Any) -> Any:
        return checked(check_payload, super().to_internal_value(data))


@extend_schema_field(
    {"type": "object", "additionalProperties": {"type": "string"}, "example": {"team": "a"}}
)
class LabelsField(BoundedJSONField):
    def to_internal_value(self, data: Any) -> Any:
        return checked(check_labels, super().to_internal_value(data))


class SchedulesField(serializers.ListField):
    child = StrictDateTimeField()
    default_error_messages = {
        "not_a_list": f'Enter a list of ISO 8601 instants with an offset or Z, e.g. ["{DATETIME_EXAMPLE}"].'
    }

    def to_internal_value(self, data: Any) -> Any:
        return checked(check_schedules, super().to_internal_value(data))
