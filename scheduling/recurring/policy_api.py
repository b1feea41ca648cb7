"""The schedule serializer's policy fields (policies.py): overlap, DST, max_fires and the pause.
A base the API's ScheduleSerializer extends, so a bad value answers 400 naming the field and
the accepted values, and the DST outlook the preview shows."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rest_framework import serializers

from scheduling.recurring.dst_outlook import dst_outlook
from scheduling.recurring.models import RecurringSchedule
from scheduling.recurring.policies import (
    CHOICES,
    MAX_FIRES_FORM,
    MAX_FIRES_MOST,
    PAUSED_NOTE_MAX,
    accepted,
    finished,
)
from scheduling.time.times import iso_utc

POLICY_FIELDS = (
    "overlap_policy",
    "dst_gap_policy",
    "dst_repeat_policy",
    "max_fires",
    "fire_count",
    "finished",
    "resume_policy",
    "paused_note",
    "paused_at",
    "paused_by",
)
POLICY_READ_ONLY = ("fire_count", "paused_at", "paused_by")


def policy_choice(field: str) -> serializers.ChoiceField:
    help_text = getattr(RecurringSchedule._meta.get_field(field), "help_text", "")
    return serializers.ChoiceField(
        choices=CHOICES[field].choices,
        required=False,
        help_text=f"{help_text} One of {accepted(field)}.",
        error_messages={
            "invalid_choice": f'"{{input}}" is not valid; expected one of {accepted(field)}.'
        },
    )


class SchedulePolicySerializer(serializers.ModelSerializer):
    overlap_policy = policy_choice("overlap_policy")
    dst_gap_policy = policy_choice("dst_gap_policy")
    dst_repeat_policy = policy_choice("dst_repeat_policy")
    resume_policy = policy_choice("resume_policy")
    max_fires = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_FIRES_MOST,
        help_text=f"Stop after this many fires: {MAX_FIRES_FORM}.",
        error_messages={
            "invalid": f"Enter {MAX_FIRES_FORM}.",
            "min_value": f"Enter {MAX_FIRES_FORM}.",
            "max_value": f"Enter {MAX_FIRES_FORM}.",
            "max_string_length": f"Enter {MAX_FIRES_FORM}.",
        },
    )
    paused_note = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=PAUSED_NOTE_MAX,
        help_text="Why the schedule is paused (with enabled false); cleared when it resumes.",
    )
    finished = serializers.SerializerMethodField(
        help_text="It fired max_fires times: no fire is left."
    )

    def get_finished(self, schedule: RecurringSchedule) -> bool:
        return finished(schedule)


def dst_outlook_body(schedule: RecurringSchedule, *, now: datetime) -> list[dict[str, Any]]:
    """The preview's `dst`: the next DST changes and the fire times around each."""
    return [
        {
            "at": iso_utc(outlook.at),
            "change": outlook.change,
            "policy": outlook.policy,
            "window": outlook.window,
            "fire_times": [iso_utc(fire) for fire in outlook.fire_times],
        }
        for outlook in dst_outlook(schedule, now=now)
    ]
