"""RabbitMQ quorum queues (CELERY_BROKER_QUORUM_QUEUES=1): the queues are declared quorum
(replicated by Raft on a cluster), publisher confirms stay on, and a real worker handles each
event once. In a virtual host of the test's own, so no other run's queues are touched."""

import json
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.conftest import ROOT, manage, start_django, start_worker, stop_process, wait_for
from tests.factories import make_due_pings
from tests.faults.conftest import worker_log, worker_ready
from tests.testapp.models import Ping, PingEffect, ScheduledNotice

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def rabbitmqctl(*arguments: str) -> str:
    return subprocess.run(
        ["rabbitmqctl", "-q", *arguments], capture_output=True, text=True, check=True, timeout=60
    ).stdout


@pytest.fixture
def quorum_vhost() -> Iterator[str]:
    if shutil.which("rabbitmqctl") is None:
        pytest.fail("rabbitmqctl is required to give the test a virtual host of its own")
    try:
        socket.create_connection(("127.0.0.1", 5672), timeout=2).close()
    except OSError:
        pytest.fail("RabbitMQ is not running on 127.0.0.1:5672 (.ci/run starts it)")
    vhost = f"scheduling-quorum-{uuid.uuid4().hex[:12]}"
    rabbitmqctl("add_vhost", vhost)
    try:
        rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
        yield vhost
    finally:
        rabbitmqctl("delete_vhost", vhost)


def queue_types(vhost: str) -> dict[str, str]:
    listed = json.loads(
        rabbitmqctl("list_queues", "-p", vhost, "name", "type", "--formatter", "json")
    )
    return {queue["name"]: queue["type"] for queue in listed}


def test_quorum_queues_are_declared_and_a_real_worker_handles_each_event_once(
    quorum_vhost, subprocess_env
):
    pks = make_due_pings(40)
    notice = ScheduledNotice.objects.create(
        ping=Ping.objects.create(name="notice"), due_at=timezone.now() - timedelta(minutes=1)
    )
    env = {
        **subprocess_env,
        "CELERY_BROKER_URL": f"amqp://guest:guest@127.0.0.1:5672/{quorum_vhost}",
        "CELERY_BROKER_QUORUM_QUEUES": "1",
    }
    log = worker_log("test-worker-quorum")
    worker = start_worker(env, "testapp", log)
    try:
        wait_for(lambda: worker_ready(log), timeout=60, interval=0.1)
        swept = manage(env, "sweep", "testapp.ScheduledPing", "testapp.ScheduledNotice")
        output = swept.communicate(timeout=120)[0]
        assert swept.returncode == 0, output
        wait_for(lambda: PingEffect.objects.count() >= len(pks), timeout=60, interval=0.1)
    finally:
        stop_process(worker)

    types = queue_types(quorum_vhost)
    # The domain's queue (declared by the worker and the publisher alike) and the plain-JSON
    # queue a keyed job or schedule names.
    assert types["testapp"] == "quorum"
    assert types[notice.target_queue] == "quorum"
    assert sorted(PingEffect.objects.values_list("event_id", flat=True)) == sorted(
        f"testapp.scheduledping:{pk}:v1" for pk in pks
    )
    # RabbitMQ refuses global QoS on quorum queues: the worker detected them and asked for
    # per-consumer prefetch instead, or it would not have consumed at all.
    worker_output = (ROOT / ".run" / f"{log}.log").read_text()
    assert "PRECONDITION_FAILED" not in worker_output, worker_output


def test_quorum_queues_are_refused_with_a_broker_that_has_none():
    started = start_django(
        CELERY_BROKER_URL="redis://127.0.0.1:6379/1", CELERY_BROKER_QUORUM_QUEUES="1"
    )
    assert started.returncode != 0
    assert "CELERY_BROKER_QUORUM_QUEUES=1 is not valid with this broker" in started.stderr
