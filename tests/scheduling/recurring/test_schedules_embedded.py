"""The embedded mode (SQLite, filesystem broker): schedules materialise, deliver and chain."""

import time

import pytest

from tests.scheduling.delivery.test_embedded_mode import embedded_env, run

pytestmark = pytest.mark.slow

CREATE = """
from scheduling.recurring.models import RecurringSchedule
RecurringSchedule.objects.create(
    name="embedded", cron="* * * * * ?", queue="ticks", payload_template={"d": "${todaysDate}"}
)
"""
STATE = """
from scheduling.recurring.models import ScheduledOccurrence as O
rows = O.objects.filter(schedule__name="embedded")
print(rows.filter(status="delivered").count(), rows.filter(status="pending").count())
"""


def test_the_embedded_mode_delivers_and_chains_occurrences(tmp_path):
    env = embedded_env(tmp_path)
    run(env, "migrate", "-v", "0")
    run(env, "shell", "-v", "0", "-c", CREATE)
    time.sleep(1.5)  # the first fire is the next whole second

    output = run(env, "sweep", "scheduling_recurring.ScheduledOccurrence")

    # Every fire time already due is delivered (one, or two when the process started slowly:
    # the sweep also delivers a successor that its own batch made due), and one stays pending.
    delivered, pending = map(int, run(env, "shell", "-v", "0", "-c", STATE).split())
    assert delivered >= 1
    assert f"delivered={delivered}" in output
    assert pending == 1
    assert len(list((tmp_path / "broker" / "out").iterdir())) == delivered
