"""Pre-order emails through a real worker to a local SMTP server (aiosmtpd): a refused
connection is retried by itself (nothing was sent), a connection cut after DATA is left for a
person (the email may have gone), and a row whose send is under way reads in flight."""

import asyncio
import os
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import pytest
from aiosmtpd.controller import Controller
from django.utils import timezone

from purchases.models import ScheduledPurchase
from scheduling.delivery.sweep.run import sweep
from tests.conftest import ROOT, start_worker, stop_process, wait_for
from tests.purchases.factories import CustomerFactory, PurchaseFactory, ScheduledPurchaseFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

Status = ScheduledPurchase.Status
WORKER_LOG = f"smtp-worker-{os.environ['TEST_REDIS_PAIR']}"


class Mailbox:
    """aiosmtpd's handler: keeps each accepted message's recipients; cuts the connection after
    DATA for the recipients in `drop`; holds DATA for those in `hold` until `release` is set."""

    def __init__(self, *, drop: tuple[str, ...] = (), hold: tuple[str, ...] = ()) -> None:
        self.received: list[str] = []
        self.drop, self.hold = set(drop), set(hold)
        self.holding, self.release = threading.Event(), threading.Event()

    async def handle_DATA(self, server, session, envelope) -> str:
        recipients = set(envelope.rcpt_tos)
        if recipients & self.drop:
            server.transport.close()  # after the whole message: it may or may not go out
            return "421 closing"
        if recipients & self.hold:
            self.holding.set()
            await asyncio.get_running_loop().run_in_executor(None, self.release.wait, 60)
        self.received.extend(envelope.rcpt_tos)
        return "250 Message accepted for delivery"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def smtp_port() -> int:
    return free_port()


@pytest.fixture
def worker(subprocess_env, smtp_port) -> Iterator[object]:
    """A real worker on the purchases queue, sending over SMTP to 127.0.0.1:smtp_port."""
    env = {
        **subprocess_env,
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": str(smtp_port),
        "EMAIL_TIMEOUT": "60",
        "SCHEDULING_RETRY_BACKOFF": "0.2",
        "SCHEDULING_RETRY_BACKOFF_MAX": "0.5",
        "SCHEDULING_MAX_ATTEMPTS": "1000",
    }
    process = start_worker(env, "purchases", WORKER_LOG)
    yield process
    stop_process(process)


def serve(mailbox: Mailbox, port: int) -> Controller:
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    return controller


def due_emails(*emails):
    due_at = timezone.now() - timedelta(seconds=1)
    return [
        ScheduledPurchaseFactory(
            purchase=PurchaseFactory(customer=CustomerFactory(email=email)), due_at=due_at
        )
        for email in emails
    ]


def swept_until(condition, worker, timeout: float = 90.0):
    """Sweep (publish what is due, reconcile) until `condition` holds."""

    def check():
        log = (ROOT / ".run" / f"{WORKER_LOG}.log").read_text()
        assert worker.poll() is None, f"the worker exited:\n{log[-3000:]}"
        sweep(ScheduledPurchase)
        return condition()

    return wait_for(check, timeout=timeout, interval=0.1)


def rows() -> list[ScheduledPurchase]:
    return list(ScheduledPurchase.objects.order_by("pk"))


def refused_twice() -> bool:
    return ScheduledPurchase.objects.filter(
        attempts__gte=2, last_error__icontains="ConnectionRefusedError"
    ).exists()


def test_an_outage_that_refuses_connections_needs_nobody(worker, smtp_port, settings):
    settings.SCHEDULING_MAX_ATTEMPTS = 1000
    emails = [f"fan{n}@example.com" for n in range(12)]
    due_emails(*emails)
    mailbox = Mailbox()

    # Nothing listens on the port: every connection is refused, and retried by itself.
    swept_until(refused_twice, worker)
    assert not ScheduledPurchase.objects.filter(status=Status.FAILED).exists()
    controller = serve(mailbox, smtp_port)
    try:
        swept_until(lambda: all(row.lifecycle == "handled" for row in rows()), worker)
    finally:
        controller.stop()

    assert Counter(mailbox.received) == Counter(emails)  # each sent exactly once
    assert {row.status for row in rows()} == {Status.DELIVERED}
    assert max(row.attempts for row in rows()) >= 2


def test_a_connection_cut_after_data_is_left_for_a_person(worker, smtp_port):
    dropped, *_ = due_emails("cut@example.com", "ann@example.com", "bob@example.com")
    mailbox = Mailbox(drop=("cut@example.com",))
    controller = serve(mailbox, smtp_port)
    try:
        swept_until(lambda: {row.lifecycle for row in rows()} == {"handled", "failed"}, worker)
    finally:
        controller.stop()

    dropped.refresh_from_db()
    assert dropped.status == Status.FAILED
    assert dropped.last_error.startswith("at-most-once: the handler failed during the effect")
    assert "SMTPServerDisconnected" in dropped.last_error
    assert (dropped.attempts, dropped.effect_started_at is not None) == (1, True)
    assert sorted(mailbox.received) == ["ann@example.com", "bob@example.com"]


def test_a_send_under_way_reads_in_flight_and_is_never_republished(
    worker, smtp_port, settings, api, admin_client
):
    row = due_emails("slow@example.com")[0]
    mailbox = Mailbox(hold=("slow@example.com",))
    controller = serve(mailbox, smtp_port)
    try:
        swept_until(mailbox.holding.is_set, worker)
        listed = api.get("/api/scheduled-purchases/", {"lifecycle": "in_flight"}).json()
        page = admin_client.get(
            "/admin/purchases/scheduledpurchase/", {"lifecycle": "in_flight"}
        ).content.decode()
        attempts = ScheduledPurchase.objects.get(pk=row.pk).attempts
        # Past the handling timeout, while the send still runs: stuck, never published again.
        settings.SCHEDULING_HANDLING_TIMEOUT = 1
        wait_for(ScheduledPurchase.objects.stuck_in_flight().exists, timeout=30)
        for _ in range(5):
            assert sweep(ScheduledPurchase).requeued == 0
        during = ScheduledPurchase.objects.get(pk=row.pk)
        mailbox.release.set()
        swept_until(lambda: rows()[0].lifecycle == "handled", worker)
    finally:
        mailbox.release.set()
        controller.stop()

    assert [(item["id"], item["lifecycle"]) for item in listed["results"]] == [
        (row.pk, "in_flight")
    ]
    assert "In flight" in page
    assert f"{row.pk} v1" in page
    assert (during.lifecycle, during.version, during.attempts) == ("in_flight", 1, attempts)
    assert mailbox.received == ["slow@example.com"]
