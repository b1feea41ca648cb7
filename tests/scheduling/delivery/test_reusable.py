"""The framework as a reusable app: it wires itself into Celery, the admin and DRF, and its
system checks name what would otherwise fail silently."""

from datetime import timedelta

import pytest
from celery import current_app, signals
from celery.beat import Service
from django.contrib import admin
from django.core.cache import caches
from django.test import override_settings
from django.utils import timezone
from kombu import Queue
from rest_framework.test import APIClient

from purchases.admin import ScheduledPurchaseAdmin
from purchases.models import ScheduledPurchase
from scheduling.delivery.checks import check_handler_tasks, check_lock_store, check_queues_declared
from scheduling.delivery.locks import RedisSweepLock, sweep_lock
from scheduling.ops.admin.base import ScheduledEventAdmin
from scheduling.recurring.models import ScheduledOccurrence
from scheduling.rows.databases import redis_client_for_locks
from scheduling.rows.registry import get_scheduled_model
from tests.factories import ScheduledPingFactory
from tests.testapp.models import ScheduledPing

DJANGO_REDIS_CACHE = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache"}}


def ids(messages) -> list[str]:
    return [message.id for message in messages]


def test_beat_gets_a_sweep_entry_per_model_without_any_host_code(tmp_path):
    service = Service(current_app, schedule_filename=str(tmp_path / "beat"))
    try:
        signals.beat_init.send(sender=service)
        entries = service.scheduler.schedule
    finally:
        service.scheduler.close()

    sweep = entries["sweep testapp.ScheduledPing slot 0"]
    assert sweep.task == "scheduling.sweep"
    assert sweep.args == ("testapp.ScheduledPing",)
    assert sweep.options["queue"] == "scheduling"
    assert "sweep purchases.ScheduledPurchase slot 0" in entries


@pytest.mark.django_db
def test_a_model_no_admin_module_registers_gets_the_framework_admin(admin_client):
    ScheduledPingFactory(due_at=timezone.now() + timedelta(hours=1))

    page = admin_client.get("/admin/testapp/scheduledping/")

    assert isinstance(admin.site._registry[ScheduledPing], ScheduledEventAdmin)
    assert page.status_code == 200
    actions = {name for name, _ in page.context["action_form"].fields["action"].choices}
    assert {"cancel_rows", "reschedule_rows", "shift_rows", "deliver_now", "retry_rows"} <= actions
    # The entity (the row's foreign key) is a column of the changelist.
    assert "ping" in page.context["cl"].list_display


def test_a_model_the_host_registers_keeps_the_host_admin():
    assert type(admin.site._registry[ScheduledPurchase]) is ScheduledPurchaseAdmin


def test_no_warning_with_a_redis_cache_and_every_handler_defined():
    assert check_lock_store() == []
    assert check_handler_tasks() == []
    assert check_queues_declared() == []


@override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}})
def test_a_cache_that_is_not_redis_is_named_by_a_warning():
    [warning] = check_lock_store()

    assert warning.id == "scheduling.W001"
    assert "per process" in warning.msg


def test_djangos_own_redis_cache_holds_a_real_sweep_lock(settings):
    location = settings.CACHES["default"]["LOCATION"]
    with override_settings(
        CACHES={"default": {**DJANGO_REDIS_CACHE["default"], "LOCATION": location}}
    ):
        caches["default"].get("warm-up")  # a real round trip through Django's own backend
        first = sweep_lock("scheduling:test:django-redis-cache", ttl=5)
        second = sweep_lock("scheduling:test:django-redis-cache", ttl=5)
        try:
            assert isinstance(first, RedisSweepLock)
            assert redis_client_for_locks() is not None
            assert check_lock_store() == []
            assert first.acquire()
            assert not second.acquire()
        finally:
            first.release()
        assert second.acquire()
        second.release()


def test_a_handler_task_no_tasks_module_defines_is_named_by_an_error(monkeypatch):
    monkeypatch.setattr(ScheduledPing, "handler_task", "testapp.no_such_task")

    [error] = check_handler_tasks()

    assert error.id == "scheduling.E004"
    assert error.is_serious()  # check, runserver and migrate stop
    assert "testapp.ScheduledPing" in error.msg
    assert "'testapp.no_such_task'" in error.msg
    assert "'testapp'" in error.msg  # the queue its events would wait in


def test_a_queue_the_declared_queues_leave_out_is_named_by_a_warning():
    declared = current_app.conf.task_queues
    current_app.conf.task_queues = [Queue("celery"), Queue("testapp")]
    try:
        warnings = check_queues_declared()
    finally:
        current_app.conf.task_queues = declared

    assert {w.id for w in warnings} == {"scheduling.W003"}
    named = " ".join(w.msg for w in warnings)
    assert "'purchases'" in named
    assert "'testapp'" not in named


def test_an_event_of_the_earlier_layout_finds_its_model():
    assert get_scheduled_model("scheduling.scheduledoccurrence") is ScheduledOccurrence
    assert get_scheduled_model("scheduling.ScheduledOccurrence") is ScheduledOccurrence


@pytest.mark.django_db
def test_the_api_works_with_an_empty_rest_framework_setting(settings, admin_user):
    settings.REST_FRAMEWORK = {}
    del settings.SCHEDULING_BULK_THROTTLE_RATE
    ScheduledPingFactory.create_batch(3, due_at=timezone.now() + timedelta(hours=1))
    client = APIClient()
    client.force_login(admin_user)

    listed = client.get("/api/jobs/", {"limit": 1})
    cancelled = client.post(
        "/api/scheduled-purchases/cancel/", {"filter": {"status": "pending"}}, format="json"
    )
    filtered = client.get("/api/scheduled-purchases/", {"status": "nonsense"})

    assert listed.status_code == 200
    assert set(listed.json()) == {"count", "next", "previous", "results"}
    assert cancelled.status_code == 200, cancelled.content
    assert cancelled.json() == {"count": 0}
    assert filtered.status_code == 400  # the filter backend is the view's own, not a setting's
    assert "status" in filtered.json()


@pytest.mark.django_db
def test_the_api_refuses_anonymous_callers_with_an_empty_rest_framework_setting(settings):
    settings.REST_FRAMEWORK = {}

    response = APIClient().get("/api/scheduled-purchases/")

    assert response.status_code in (401, 403)


@pytest.mark.django_db
def test_a_model_with_no_api_code_gets_a_list_and_bulk_actions(admin_user):
    from tests.factories import PingFactory

    ping = PingFactory()
    mine = ScheduledPingFactory.create_batch(
        2, ping=ping, due_at=timezone.now() + timedelta(hours=1)
    )
    ScheduledPingFactory(due_at=timezone.now() + timedelta(hours=1))
    client = APIClient()
    client.force_login(admin_user)
    url = "/api/events/testapp/scheduledping/"

    listed = client.get(url, {"ping": ping.pk, "lifecycle": "pending"})
    cancelled = client.post(f"{url}cancel/", {"filter": {"ping": ping.pk}}, format="json")
    refused = client.post(f"{url}cancel/", {"filter": {"nope": 1}}, format="json")

    assert listed.status_code == 200
    assert {row["id"] for row in listed.json()["results"]} == {row.pk for row in mine}
    assert listed.json()["results"][0]["ping"] == ping.pk
    assert cancelled.json() == {"count": 2}
    assert refused.status_code == 400
    assert "ping" in refused.json()["filter"]  # the accepted filters are named


def test_beat_logs_its_first_sweep_tick_only_and_keeps_its_other_lines(caplog):
    import logging
    import uuid

    beat_log = logging.getLogger("celery.beat")
    entry = f"sweep a.B slot {uuid.uuid4().hex}"  # the filter remembers the entries it has seen
    with caplog.at_level(logging.INFO, logger="celery.beat"):
        for _ in range(3):
            beat_log.info("Scheduler: Sending due task %s (%s)", entry, "scheduling.sweep")
        beat_log.info("Scheduler: Sending due task %s (%s)", "scheduling purge", "scheduling.purge")

    assert [r.getMessage() for r in caplog.records] == [
        f"Scheduler: Sending due task {entry} (scheduling.sweep)",
        "Scheduler: Sending due task scheduling purge (scheduling.purge)",
    ]
