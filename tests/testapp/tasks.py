import time
from typing import Any

from celery import shared_task
from django.db import DEFAULT_DB_ALIAS, connections

from scheduling.delivery.handlers import handler
from scheduling.delivery.handling.batches import handle_batch
from scheduling.delivery.handling.once import handle_once
from scheduling.delivery.tasks import EventHandlerTask
from scheduling.rows.registry import get_scheduled_model
from tests.testapp.models import (
    PingEffect,
    PingModel,
    ScheduledOnce,
    ScheduledPing,
    ScheduledPingPartitioned,
)


@shared_task(base=EventHandlerTask, name="testapp.handle_ping")
def handle_ping(event: dict[str, Any]) -> str:
    return handle_ping_of(ScheduledPing, event)


@shared_task(base=EventHandlerTask, name="testapp.handle_ping_partitioned")
def handle_ping_partitioned(event: dict[str, Any]) -> str:
    return handle_ping_of(ScheduledPingPartitioned, event)


def handle_ping_of(model: PingModel, event: dict[str, Any]) -> str:
    with handle_once(event, model) as row:
        if row is None:
            return "skipped"
        fail_if_planned(row.ping.name, row.attempts)
        if row.ping.name.startswith("slow:"):
            # Fault tests kill the worker here, mid-handler, inside handle_once's transaction.
            time.sleep(float(row.ping.name.removeprefix("slow:")))
        PingEffect.objects.create(event_id=event["id"], ping_id=row.ping_id)
        return "handled"


@shared_task(base=EventHandlerTask, name="testapp.handle_once_ping")
def handle_once_ping(event: dict[str, Any]) -> str:
    with handle_once(event, ScheduledOnce) as row:
        if row is None:
            return "skipped"
        effect_beyond_rollback(event["id"], row.ping_id)
        if row.ping.name.startswith("slow:"):
            # Fault tests kill the worker here: the effect happened, it never reported back.
            time.sleep(float(row.ping.name.removeprefix("slow:")))
        return "handled"


def effect_beyond_rollback(event_id: str, ping_id: int) -> None:
    """The effect, recorded on a connection of its own in autocommit: like an email once sent,
    no rollback of the handler's transaction takes it back when the worker dies."""
    own = connections.create_connection(DEFAULT_DB_ALIAS)
    try:
        with own.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {PingEffect._meta.db_table} (event_id, ping_id, handled_at)"
                " VALUES (%s, %s, statement_timestamp())",
                [event_id, ping_id],
            )
    finally:
        own.close()


@shared_task(base=EventHandlerTask, name="testapp.handle_ping_batch")
def handle_ping_batch(events: list[dict[str, Any]]) -> str:
    """A batch of any ping model's events (the tests set its handler_batch_size): each row's
    effect in a transaction of its own; a ping named "whole-batch-fails" fails the batch."""
    model = get_scheduled_model(events[0]["model"])
    with handle_batch(events, model) as batch:
        pings: list[Any] = batch.rows
        if any(row.ping.name == "whole-batch-fails" for row in pings):
            raise ConnectionError("planned failure of the whole batch")
        done = batch.each(ping_effect)
    return f"handled {len(done)} of {len(events)}"


def ping_effect(row: Any) -> None:
    fail_if_planned(row.ping.name, row.attempts)
    if row.ping.name.startswith("slow:"):
        # Fault tests kill the worker here, mid-batch, inside this row's transaction.
        time.sleep(float(row.ping.name.removeprefix("slow:")))
    PingEffect.objects.create(event_id=row.event_id, ping_id=row.ping_id)


@shared_task(base=EventHandlerTask, name="testapp.handle_once_ping_batch")
def handle_once_ping_batch(events: list[dict[str, Any]]) -> str:
    """ScheduledOnce's events in batches: each effect beyond any rollback, at most once."""
    with handle_batch(events, ScheduledOnce) as batch:
        done = batch.each(once_effect, prepare=refuse_if_planned)
    return f"handled {len(done)} of {len(events)}"


def refuse_if_planned(row: ScheduledOnce) -> None:
    """Before the effect: a ping named "refused:N" fails its first N tries there."""
    name = row.ping.name
    if name.startswith("refused:") and row.attempts <= int(name.removeprefix("refused:")):
        raise ConnectionRefusedError(f"planned refusal on try {row.attempts} of {name}")


def once_effect(row: ScheduledOnce) -> None:
    effect_beyond_rollback(row.event_id, row.ping_id)
    if row.ping.name == "fails-during-effect":
        raise RuntimeError("planned failure after the effect began")
    if row.ping.name.startswith("slow:"):
        # Fault tests kill the worker here: the effect happened, it never reported back.
        time.sleep(float(row.ping.name.removeprefix("slow:")))


def fail_if_planned(name: str, attempts: int) -> None:
    """A ping named "fail:N" fails its first N tries (the sweep counts each publication in
    `attempts`), as a handler does while the service it calls is down."""
    if name.startswith("fail:") and attempts <= int(name.removeprefix("fail:")):
        raise RuntimeError(f"planned failure on try {attempts} of {name}")


# The declarative form: one handler each, whatever the model's handler_batch_size (the tests
# switch it between 0 and N without touching these).
@handler(ScheduledPing, name="testapp.declared_ping")
def declared_ping(row: ScheduledPing) -> str:
    ping_effect(row)
    return "handled"


@handler(ScheduledOnce, name="testapp.declared_once_ping", prepare=refuse_if_planned)
def declared_once_ping(row: ScheduledOnce) -> str:
    once_effect(row)
    return "handled"


@shared_task(name="testapp.note_job_run")
def note_job_run(event: dict[str, Any]) -> str:
    """A task of this project that a keyed job's task callback may name: no model's handler."""
    return str(event["data"]["key"])
