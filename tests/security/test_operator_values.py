"""Operator values that used to pass `check` and break delivery: each is now refused at start in
one line naming it, and a handling failure is recorded whatever its backoff works out to."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.delivery.handling.once import handle_once
from scheduling.rows.states import Status
from tests.conftest import check_django, start_django
from tests.factories import ScheduledPingFactory
from tests.testapp.models import ScheduledPing


def test_check_names_each_absurd_scheduling_value_and_its_range():
    checked = check_django(
        SCHEDULING_HANDLING_TIMEOUT="1e18",
        SCHEDULING_RETRY_BACKOFF="1e12",
        SCHEDULING_SWEEPER_SLOTS="10000",
        SCHEDULING_LOCK_TTL="8e13",
    )

    assert checked.returncode != 0
    assert "Traceback" not in checked.stderr
    errors = [line for line in checked.stderr.splitlines() if "(scheduling.E001)" in line]
    assert sorted(line.split(") ", 1)[1] for line in errors) == [
        "SCHEDULING_HANDLING_TIMEOUT=1e+18 is not valid: expected a number of seconds > 0 and "
        "<= 2,592,000 (30 days).",
        "SCHEDULING_LOCK_TTL=80000000000000.0 is not valid: expected a number of seconds > 0 "
        "and <= 3,600 (1 hour).",
        "SCHEDULING_RETRY_BACKOFF=1000000000000.0 is not valid: expected a number of seconds "
        "from 0 to 2,592,000 (30 days).",
        "SCHEDULING_SWEEPER_SLOTS=10000 is not valid: expected an integer from 1 to 64.",
    ]


@pytest.mark.parametrize(
    ("variable", "value", "line"),
    [
        ("PORT", "99999", "PORT='99999' is not valid: expected an integer from 1 to 65535."),
        (
            "EMAIL_PORT",
            "99999",
            "EMAIL_PORT='99999' is not valid: expected an integer from 1 to 65535.",
        ),
        (
            "LOG_LEVEL",
            "LOUD",
            "LOG_LEVEL='LOUD' is not valid: expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL.",
        ),
        (
            "TRAININGS_PUSH_BACKEND",
            "os.system",
            "TRAININGS_PUSH_BACKEND='os.system' is not valid: expected the dotted path of a "
            "class, e.g. trainings.push.RecordingPushBackend.",
        ),
        (
            "TRAININGS_PUSH_BACKEND",
            "purchases.models.Purchase",
            "TRAININGS_PUSH_BACKEND='purchases.models.Purchase' is not valid: expected the dotted "
            "path of a push backend class (one with send(pushes)), such as "
            "trainings.push.RecordingPushBackend, trainings.push.LoggingPushBackend or "
            "trainings.push.HttpPushBackend; purchases.models.Purchase is not a class with "
            "send(pushes).",
        ),
    ],
)
def test_the_demo_refuses_a_bad_environment_value_in_one_line_naming_it(variable, value, line):
    started = start_django(**{variable: value})

    assert started.returncode != 0
    # The process ends on the refusal itself, not on what the value broke further on.
    assert started.stderr.strip().splitlines()[-1] == (
        f"django.core.exceptions.ImproperlyConfigured: {line}"
    )
    assert "Error:" not in started.stderr.replace("ImproperlyConfigured:", "")


def failed_handling(row):
    event = {"id": row.event_id, "model": "testapp.scheduledping", "pk": row.pk}

    def handle():
        with handle_once({**event, "version": row.version}) as handled:
            assert handled is not None
            raise RuntimeError("smtp down")

    with pytest.raises(RuntimeError):
        handle()


@pytest.mark.django_db
@pytest.mark.parametrize("backoff", [1e12, 1e300, float("inf"), float("nan")])
def test_a_failure_is_recorded_whatever_the_backoff_works_out_to(monkeypatch, backoff):
    # Class attributes are checked when the model is imported; one set afterwards slips past.
    monkeypatch.setattr(ScheduledPing, "retry_backoff", backoff)
    monkeypatch.setattr(ScheduledPing, "retry_backoff_max", backoff)
    row = ScheduledPingFactory(status=Status.DELIVERED, attempts=3)

    failed_handling(row)

    row.refresh_from_db()
    assert (row.status, row.last_error) == (Status.PENDING, "RuntimeError: smtp down")
    assert row.due_at <= timezone.now() + timedelta(days=30)
