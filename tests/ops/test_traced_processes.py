"""The demo traced end to end (docs/tracing.md): the Procfile's web, worker and beat export
their spans to an OTLP/HTTP receiver. A pre-order sold by a REST request that carries a
`traceparent` is published by a sweep whose `send` span links to that request's trace, and
handled by the worker in a `process` span that links to it (or continues it)."""

import httpx
import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.authtoken.models import Token

from purchases.models import ScheduledPurchase
from tests.conftest import wait_for
from tests.ops.procfile import process_env, procfile_process
from tests.ops.test_connection_ceiling import listening
from tests.ops.test_up_processes import free_port
from tests.otlp import ReceivedSpan, Receiver, otlp_receiver
from tests.purchases.factories import CustomerFactory, ReleaseFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

REQUEST_TRACE = "0af7651916cd43dd8448eb211c80319c"
TRACEPARENT = f"00-{REQUEST_TRACE}-b7ad6b7169203331-01"


def in_request_trace(span: ReceivedSpan) -> bool:
    return span.trace_id == REQUEST_TRACE or REQUEST_TRACE in {trace for trace, _ in span.links}


def spans_named(receiver: Receiver, prefix: str) -> list[ReceivedSpan]:
    with receiver.lock:
        return [s for s in receiver.spans if s.name.startswith(prefix) and in_request_trace(s)]


def test_a_pre_order_sold_over_rest_is_published_and_handled_in_its_requests_trace(
    subprocess_env, tmp_path
):
    token = Token.objects.create(user=User.objects.create_superuser("ops", password="pw")).key
    release = ReleaseFactory(release_date=timezone.now())  # fulfilled at once
    customer = CustomerFactory()
    with otlp_receiver() as receiver:
        port = free_port()
        env = process_env(
            subprocess_env,
            PORT=str(port),
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
            OTEL_BSP_SCHEDULE_DELAY="200",
        )
        with (
            procfile_process("web", env, tmp_path / "web.log"),
            procfile_process("worker", env, tmp_path / "worker.log"),
            procfile_process("beat", env, tmp_path / "beat.log"),
        ):
            wait_for(lambda: listening(port), timeout=60)
            response = httpx.post(
                f"http://127.0.0.1:{port}/api/purchases/",
                json={"customer": customer.pk, "release": release.pk},
                headers={"Authorization": f"Token {token}", "traceparent": TRACEPARENT},
                timeout=30,
            )
            assert response.status_code == 201, response.text
            row = ScheduledPurchase.objects.get(purchase_id=response.json()["id"], track=None)
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
