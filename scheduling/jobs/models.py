"""Keyed jobs: services outside this codebase schedule callbacks by key, over HTTP.

A Job holds what to send (callback, payload, labels); its ScheduledJobRun rows hold when. The
sweep reads the job while it publishes a run, so a change of payload reaches every pending run.

Every write is a service (services.py), one transaction each; the API and the admin call them.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from scheduling.delivery.publishing.targets import CallbackType
from scheduling.jobs.indexes import JsonContainmentIndex
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.outgoing import OutgoingJson, OutgoingMessage, dumps
from scheduling.time.times import iso_utc


class Job(models.Model):
    key = models.CharField(max_length=200, unique=True)
    callback = models.JSONField(help_text='{"type": "queue", "queue": …} or {"type": "task", …}')
    payload = models.JSONField(default=dict, blank=True)
    labels = models.JSONField(default=dict, blank=True)
    # The API user who created it (or the first to PUT it, if code created it): its pending
    # runs count against that user's caps (scheduling.jobs.volume). None: code or the admin.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        editable=False,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # What each run carries besides its instant: payload and labels as compact JSON, in bytes.
    run_bytes = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "scheduling_job"
        ordering = ("key",)
        indexes = [
            # GET /api/jobs/?label.<name>=<value>: labels @> '{"<name>": "<value>"}'.
            JsonContainmentIndex(fields=["labels"], name="scheduling_job_labels_gin"),
            # GET /api/jobs/?payload.<path>=<value>: payload @> '{"<a>": {"<b>": <value>}}'.
            JsonContainmentIndex(fields=["payload"], name="scheduling_job_payload_gin"),
        ]

    def __str__(self) -> str:
        return self.key

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.run_bytes = len(dumps(self.payload)) + len(dumps(self.labels))
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and {"payload", "labels"} & set(update_fields):
            kwargs["update_fields"] = {*update_fields, "run_bytes"}
        super().save(*args, **kwargs)


class ScheduledJobRun(ScheduledEvent):
    """One instant of a job. Queue callbacks get plain JSON; task callbacks a Celery message."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="runs")

    event_type = "scheduling.job"
    related_for_event = ("job",)

    class Meta(ScheduledEvent.Meta):
        db_table = "scheduled_job_run"
        indexes = [
            # GET /api/jobs/?status=…: job_id IN (SELECT job_id … WHERE status IN (…)), and a
            # job's pending runs, which PUT, PATCH and DELETE lock.
            models.Index(fields=["job", "status"], name="scheduled_job_run_job_status"),
        ]

    @property
    def message_id(self) -> str:
        """The id a consumer sees: stable across republishing, new with every reschedule.

        A rabbitmq callback's body is the payload alone: on RabbitMQ its consumer finds the id
        in the message's message_id property."""
        if self.job.callback.get("type") in (CallbackType.QUEUE, CallbackType.RABBITMQ):
            return f"{self.job.key}:{self.pk}:v{self.version}"
        return self.event_id

    def event_data(self) -> dict[str, Any]:
        return {"key": self.job.key, "payload": self.job.payload, "labels": self.job.labels}

    def queue_body(self, published_at: str) -> dict[str, Any]:
        return {
            "id": self.message_id,
            "key": self.job.key,
            "scheduled_for": iso_utc(self.due_at),
            "published_at": published_at,
            "payload": self.job.payload,
            "labels": self.job.labels,
        }

    def to_message(self, published_at: str) -> OutgoingMessage:
        callback = self.job.callback
        if callback.get("type") == CallbackType.QUEUE:
            return OutgoingJson(
                queue=callback["queue"],
                body=self.queue_body(published_at),
                message_id=self.message_id,
            )
        if callback.get("type") == CallbackType.RABBITMQ:
            # MyCoach's contract: the message body is the payload exactly as it was sent.
            return OutgoingJson(
                queue=callback["data"]["queue"], body=self.job.payload, message_id=self.message_id
            )
        if callback.get("type") == CallbackType.TASK:
            return self.task_message(published_at, callback["task"], callback["queue"])
        raise ValueError(f"job {self.job.key!r} has an unknown callback {callback!r}")


class TaskOutcome(models.Model):
    """What a django.tasks task stored as this job (scheduling.jobs.backends) left behind: when its
    tries began, which workers ran them, their errors and its return value. The run holds the
    rest (status, times, attempts); get_result() reads both."""

    job = models.OneToOneField(
        Job, on_delete=models.CASCADE, primary_key=True, related_name="task_outcome"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    last_attempted_at = models.DateTimeField(null=True, blank=True)
    worker_ids = models.JSONField(default=list, blank=True)
    # [{"exception_class_path": ..., "traceback": ...}], oldest first (see taskruns.MAX_ERRORS).
    errors = models.JSONField(default=list, blank=True)
    return_value = models.JSONField(null=True, blank=True)

    class Meta:
        db_table = "scheduling_task_outcome"

    def __str__(self) -> str:
        return f"outcome of {self.job_id}"
