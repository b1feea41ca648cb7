"""A test-only domain: Ping is the entity, ScheduledPing its scheduled row."""

from datetime import timedelta
from typing import Any

from django.db import models

from scheduling.rows.models import ScheduledEvent
from scheduling.rows.outgoing import OutgoingJson, OutgoingMessage
from scheduling.rows.partitions import DuePartitions
from scheduling.time.times import iso_utc


class Ping(models.Model):
    name = models.CharField(max_length=100)
    group = models.CharField(max_length=100, default="")

    def __str__(self) -> str:
        return self.name


class PingEvent(ScheduledEvent):
    """What ScheduledPing and its partitioned twin share: hooks and message."""

    queue = "testapp"
    max_lateness = timedelta(days=1)
    related_for_event = ("ping",)
    search_fields = ("ping__name", "ping__group")  # the default admin's search

    class Meta(ScheduledEvent.Meta):
        abstract = True

    def event_data(self) -> dict[str, Any]:
        if self.ping.name == "poison":  # type: ignore[attr-defined]
            return {"unserialisable": {1, 2}}
        return {"ping": self.ping.name}  # type: ignore[attr-defined]


class ScheduledPing(PingEvent):
    ping = models.ForeignKey(Ping, on_delete=models.CASCADE, related_name="scheduled")

    handler_task = "testapp.handle_ping"

    class Meta(PingEvent.Meta):
        db_table = "scheduled_ping"


class ScheduledPingPartitioned(PingEvent):
    """ScheduledPing's twin whose table is range-partitioned on due_at, a partition a day."""

    ping = models.ForeignKey(Ping, on_delete=models.CASCADE, related_name="scheduled_partitioned")

    handler_task = "testapp.handle_ping_partitioned"
    partitioning = DuePartitions(interval=timedelta(days=1), premake=3)

    class Meta(PingEvent.Meta):
        db_table = "scheduled_ping_partitioned"


class ScheduledOnce(ScheduledEvent):
    """At-most-once rows: the handler claims the row before an effect that must never repeat."""

    ping = models.ForeignKey(Ping, on_delete=models.CASCADE, related_name="once")

    handler_task = "testapp.handle_once_ping"
    queue = "testapp"
    at_most_once = True
    related_for_event = ("ping",)

    class Meta(ScheduledEvent.Meta):
        db_table = "scheduled_once"

    def event_data(self) -> dict[str, Any]:
        return {"ping": self.ping.name}


class PingEffect(models.Model):
    """The user-visible effect of handling an event; duplicates would show as extra rows."""

    event_id = models.CharField(max_length=200)
    ping = models.ForeignKey(Ping, on_delete=models.CASCADE)
    handled_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.event_id


class ScheduledNotice(ScheduledEvent):
    """Rows whose message is plain JSON on a named queue, for consumers in any language."""

    ping = models.ForeignKey(Ping, on_delete=models.CASCADE, related_name="notices")
    target_queue = models.CharField(max_length=100, default="notices")

    class Meta(ScheduledEvent.Meta):
        db_table = "scheduled_notice"

    def to_message(self, published_at: str) -> OutgoingMessage:
        body = {"id": self.event_id, "scheduled_for": iso_utc(self.due_at), "ping": self.ping_id}
        return OutgoingJson(queue=self.target_queue, body={**body, "published_at": published_at})


class MisconfiguredEmailBackend:
    """An email backend whose set-up fails as a provider's does without its API key."""

    def __init__(self, **kwargs: Any) -> None:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured("ACME_API_KEY is missing")


PingModel = type[ScheduledPing] | type[ScheduledPingPartitioned]
