"""The failure signals, sent in a real worker: a host's receiver (tests/testapp/signals.py)
hears each failed try once, and a give-up once the model's own max attempts are spent."""

import pytest

from scheduling.delivery.sweep.run import sweep
from tests.conftest import start_worker, stop_process, wait_for
from tests.factories import PingFactory, ScheduledPingFactory
from tests.testapp.models import ScheduledPing
from tests.testapp.signals import recorded


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_sends_a_failure_per_failed_try_and_a_give_up_past_the_models_max_attempts(
    subprocess_env, broker, tmp_path
):
    recovers = ScheduledPingFactory(ping=PingFactory(name="fail:1"))
    gives_up = ScheduledPingFactory(ping=PingFactory(name="fail:2"))
    log = tmp_path / "signals.jsonl"
    env = {
        **subprocess_env,
        "SCHEDULING_RETRY_BACKOFF": "0.2",
        "TESTAPP_SIGNAL_LOG": str(log),
        # The model's own policy in the worker (the setting stays at its default of 10).
        "TESTAPP_PING_MAX_ATTEMPTS": "2",
    }
    worker = start_worker(env, "testapp", f"signals-worker-{recovers.pk}")
    try:
        wait_for(lambda: settled(recovers, gives_up), timeout=60, interval=0.3)
        wait_for(lambda: len(recorded(log)) >= 4, timeout=10)
    finally:
        stop_process(worker)

    lines = recorded(log)
    assert [line for line in lines if line["event"] == recovers.event_id] == [
        {
            "signal": "event_failed",
            "event": recovers.event_id,
            "status": "pending",
            "error": "RuntimeError: planned failure on try 1 of fail:1",
            "will_retry": True,
        }
    ]
    gave_up = [line for line in lines if line["event"] == gives_up.event_id]
    assert [(line["signal"], line["status"], line.get("will_retry")) for line in gave_up] == [
        ("event_failed", "pending", True),
        ("event_failed", "failed", False),
        ("event_gave_up", "failed", None),
    ]
    assert gave_up[-1]["error"] == "RuntimeError: planned failure on try 2 of fail:2"


def settled(recovers: ScheduledPing, gives_up: ScheduledPing) -> bool:
    """Sweep what fell due again; True once one row is handled and the other failed."""
    sweep(ScheduledPing)
    recovers.refresh_from_db()
    gives_up.refresh_from_db()
    return recovers.handled_at is not None and gives_up.status == "failed"
