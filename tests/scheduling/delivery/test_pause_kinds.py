"""The optional kinds under a delivery pause: keyed jobs pause through their runs' model (and
the jobs' admin list shows it); a recurring schedule keeps its own pause, and pausing the
occurrence model holds every schedule's fires without touching the schedules."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from scheduling.delivery.pauses.services import delivery_pause, delivery_resume
from scheduling.delivery.sweep.run import sweep
from scheduling.jobs.models import ScheduledJobRun
from scheduling.jobs.services import job_put
from scheduling.recurring.models import ScheduledOccurrence
from tests.scheduling.recurring.conftest import json_bodies, make_schedule, pending, sweep_at

pytestmark = pytest.mark.django_db(transaction=True)


def test_pausing_the_runs_model_holds_every_keyed_job_until_resumed(broker):
    due = timezone.now() - timedelta(seconds=5)
    callback = {"type": "queue", "queue": "reminders"}
    job_put(key="k", schedules=[due], callback=callback, payload={"v": 1}, labels={})
    delivery_pause(model=ScheduledJobRun, reason="provider down")

    assert sweep(ScheduledJobRun).paused
    assert ScheduledJobRun.objects.get().status == ScheduledJobRun.Status.PENDING
    assert ScheduledJobRun.objects.get().due_at == due

    delivery_resume(model=ScheduledJobRun)

    assert sweep(ScheduledJobRun).delivered == 1
    assert [body["payload"] for body in json_bodies(broker, "reminders")] == [{"v": 1}]


def test_the_jobs_admin_list_shows_the_runs_pause():
    delivery_pause(model=ScheduledJobRun, reason="provider down")
    user = User.objects.create_user("ops", password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(codename__in=["view_job", "pause_delivery"])
    )
    client = Client()
    client.force_login(user)

    page = client.get("/admin/scheduling_jobs/job/").content.decode()

    assert "Delivery paused" in page
    assert 'value="scheduling_jobs.scheduledjobrun"' in page
    assert "Resume delivery" in page


def test_pausing_the_occurrence_model_holds_fires_and_leaves_the_schedules_running(broker):
    schedule = make_schedule()
    fire = pending(schedule)[0].due_at
    delivery_pause(model=ScheduledOccurrence)

    assert sweep_at(fire + timedelta(seconds=1)).paused
    assert [o.due_at for o in pending(schedule)] == [fire]
    schedule.refresh_from_db()
    assert schedule.enabled  # the schedule's own pause is another thing: not touched
    assert json_bodies(broker, "reports") == []

    delivery_resume(model=ScheduledOccurrence)

    assert sweep_at(fire + timedelta(seconds=1)).delivered == 1
    assert len(json_bodies(broker, "reports")) == 1
