"""An operator's rate limit is checked before it is stored, and a bad stored one never stops a
sweep, /metrics or the dashboard: it is refused at read, with a log line, and the model's
configured limit applies."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from scheduling.delivery.ratelimit import OVERRIDE_KEY, current_limit, override_of
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.databases import redis_client_for_locks
from tests.factories import make_due_pings
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db

LABEL = "testapp.ScheduledPing"
KEY = OVERRIDE_KEY.format(label="testapp.scheduledping")


@pytest.fixture(autouse=True)
def no_override():
    client = redis_client_for_locks()
    client.delete(KEY)
    yield client
    client.delete(KEY)


def run(*args: str) -> str:
    out = StringIO()
    call_command("scheduling_rate_limit", *args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize(
    "rate", ["9" * 400 + "/s", "1000001/s", "0/s", "5/week", "5/s/s", "\uff15/s"]
)
def test_a_rate_out_of_bounds_is_refused_and_not_stored(no_override, rate):
    with pytest.raises(
        CommandError, match="<requests> from 1 to 1,000,000 and <period> s, m, h or d"
    ):
        run(LABEL, rate)

    assert no_override.get(KEY) is None


def test_the_bounds_themselves_are_accepted():
    assert run(LABEL, "1000000/s") == f"{LABEL}: 1e+06/s (override)\n"
    assert run(LABEL, "1/d").startswith(f"{LABEL}: 1.15741e-05/s")


@pytest.mark.parametrize("label", ["", " "])
def test_an_empty_label_is_refused_naming_the_known_ones(no_override, label):
    with pytest.raises(CommandError, match=f"the label is empty; give one of: .*{LABEL}"):
        run(label, "5/s")

    assert no_override.get(KEY) is None


def test_an_unknown_label_is_refused():
    with pytest.raises(CommandError, match=r"'testapp.Nothing' is not a scheduled model"):
        run("testapp.Nothing", "5/s")


@override_settings(SCHEDULING_RATE_LIMITS={LABEL: "10/s"})
def test_a_bad_stored_override_is_refused_at_read_and_delivery_goes_on(
    no_override, caplog, broker, admin_client
):
    no_override.set(KEY, "9" * 400 + "/s")  # as written by hand, or before the bounds
    make_due_pings(3)

    assert override_of(ScheduledPing) is None
    assert current_limit(ScheduledPing) == 10.0  # the configured limit
    assert sweep(ScheduledPing).delivered == 3
    assert admin_client.get("/metrics").status_code == 200
    assert admin_client.get("/admin/scheduling/dashboard/").status_code == 200
    assert run(LABEL) == f"{LABEL}: 10/s (configured)\n"
    assert "rate limit override of testapp.ScheduledPing refused" in caplog.text
