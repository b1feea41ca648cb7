"""The demo traced end to end (docs/tracing.md): the Procfile's web, worker and beat export
their spans to an OTLP/HTTP receiver. A pre-order sold, or a training created, by a REST request
that carries a `traceparent` is published by a sweep whose `send` span links to that request's
trace, and handled by the worker in a `process` span that links to it (or continues it).

TRACE_STORY=<file> writes the training's trace, drawn as a tree, to that file (docs/tracing.md
shows one).
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.authtoken.models import Token

from bench.otlp import ReceivedSpan, Receiver, otlp_receiver, render
from purchases.models import ScheduledPurchase
from tests.conftest import wait_for
from tests.ops.procfile import process_env, procfile_process
from tests.ops.test_connection_ceiling import listening
from tests.ops.test_up_processes import free_port
from tests.purchases.factories import CustomerFactory, ReleaseFactory
from trainings.models import Player, ScheduledTrainingNotification, Team

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

REQUEST_TRACE = "0af7651916cd43dd8448eb211c80319c"
TRACEPARENT = f"00-{REQUEST_TRACE}-b7ad6b7169203331-01"


def in_request_trace(span: ReceivedSpan) -> bool:
    return span.trace_id == REQUEST_TRACE or REQUEST_TRACE in {trace for trace, _ in span.links}


def spans_named(receiver: Receiver, prefix: str) -> list[ReceivedSpan]:
    with receiver.lock:
        return [s for s in receiver.spans if s.name.startswith(prefix) and in_request_trace(s)]


@contextmanager
def traced_demo(subprocess_env: dict[str, str], logs: Path) -> Iterator[tuple[Receiver, str]]:
    """The Procfile's web, worker and beat exporting to a receiver; (it, the web's URL)."""
    with otlp_receiver() as receiver:
        port = free_port()
        env = process_env(
            subprocess_env,
            PORT=str(port),
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
            OTEL_BSP_SCHEDULE_DELAY="200",
        )
        with (
            procfile_process("web", env, logs / "web.log"),
            procfile_process("worker", env, logs / "worker.log"),
            procfile_process("beat", env, logs / "beat.log"),
        ):
            wait_for(lambda: listening(port), timeout=60)
            yield receiver, f"http://127.0.0.1:{port}"


def post(url: str, body: dict[str, object]) -> dict[str, object]:
    token = Token.objects.create(user=User.objects.create_superuser("ops", password="pw")).key
    headers = {"Authorization": f"Token {token}", "traceparent": TRACEPARENT}
    response = httpx.post(url, json=body, headers=headers, timeout=30)
    assert response.status_code == 201, response.text
    created: dict[str, object] = response.json()
    return created


def test_a_pre_order_sold_over_rest_is_published_and_handled_in_its_requests_trace(
    subprocess_env, tmp_path
):
    release = ReleaseFactory(release_date=timezone.now())  # fulfilled at once
    customer = CustomerFactory()
    with traced_demo(subprocess_env, tmp_path) as (receiver, web):
        sold = post(f"{web}/api/purchases/", {"customer": customer.pk, "release": release.pk})
        row = ScheduledPurchase.objects.get(purchase_id=sold["id"], track=None)
        wait_for(lambda: ScheduledPurchase.objects.filter(pk=row.pk).handled().exists(), 90)
        [process] = wait_for(lambda: spans_named(receiver, "process purchases"), 30)
        [send] = wait_for(lambda: spans_named(receiver, "send purchases"), 30)
        creates = wait_for(lambda: spans_named(receiver, "create purchases"), 30)

    assert {span.service for span in creates} == {"scheduling-web"}
    assert all(span.trace_id == REQUEST_TRACE for span in creates)
    assert send.service == process.service == "scheduling-worker"
    assert REQUEST_TRACE in {trace for trace, _ in send.links}
    assert process.attributes["scheduling.pk"] == str(row.pk)
    assert process.attributes["scheduling.model"] == "purchases.scheduledpurchase"


def test_a_training_reminder_is_handled_in_the_trace_of_the_request_that_created_it(
    subprocess_env, tmp_path
):
    team = Team.objects.create(name="Falcons", quiet_hours=False)
    Player.objects.create(team=team, name="Ann", push_token="device-token-ann")
    with traced_demo(subprocess_env, tmp_path) as (receiver, web):
        # The last reminder before the start, 15 minutes ahead of it, falls due in seconds.
        start = timezone.now() + timedelta(minutes=15, seconds=4)
        end = start + timedelta(hours=2)
        body = {"team": team.pk, "start_at": start.isoformat(), "end_at": end.isoformat()}
        post(f"{web}/api/trainings/", body)
        reminders = ScheduledTrainingNotification.objects.filter(training__team=team)
        wait_for(lambda: reminders.handled().exists(), 90)
        [process] = wait_for(lambda: spans_named(receiver, "process trainings"), 30)
        wait_for(lambda: spans_named(receiver, "send trainings"), 30)
        wait_for(lambda: spans_named(receiver, "POST"), 30)
        spans = list(receiver.spans)

    assert process.service == "scheduling-worker"
    story = render(spans, REQUEST_TRACE)
    assert "scheduling-web: server POST" in story
    assert "producer create trainings" in story
    if os.environ.get("TRACE_STORY"):
        Path(os.environ["TRACE_STORY"]).write_text(story + "\n")
