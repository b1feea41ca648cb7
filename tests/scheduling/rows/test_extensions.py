"""A host plugs into the core through `scheduling.rows.extensions`: purge rules and REST routes,
registered once however often its AppConfig.ready() runs."""

import importlib
from collections.abc import Iterator
from dataclasses import fields
from datetime import timedelta

import pytest
from django.apps import apps
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.urls import clear_url_caches

import scheduling.ops.api.urls
from scheduling.jobs.models import Job
from scheduling.recurring.models import ScheduledOccurrence
from scheduling.recurring.purge import latest_fire
from scheduling.rows.extensions import Extensions, extensions
from scheduling.rows.purge import purge_all, purge_model, purged_models
from tests.conftest import CURRENT_TIME
from tests.factories import PingFactory
from tests.testapp.models import Ping, PingEffect, ScheduledPing

pytestmark = pytest.mark.django_db

NOW = CURRENT_TIME
DAY = timedelta(days=1)


@pytest.fixture
def host() -> Iterator[Extensions]:
    """The registry, put back as it was after the test, with the API's URLs rebuilt."""
    saved = {field.name: dict(getattr(extensions, field.name)) for field in fields(extensions)}
    yield extensions
    for name, registered in saved.items():
        getattr(extensions, name).clear()
        getattr(extensions, name).update(registered)
    reload_api_urls()


def reload_api_urls() -> None:
    importlib.reload(scheduling.ops.api.urls)
    # The root URLconf too: its include() resolvers keep the routes they read when an earlier
    # test first resolved or reversed a URL.
    importlib.reload(importlib.import_module(settings.ROOT_URLCONF))
    clear_url_caches()


def effect(*, days_old: int) -> PingEffect:
    ping = Ping.objects.create(name=f"effect-{days_old}")
    row = PingEffect.objects.create(event_id=f"effect-{days_old}", ping=ping)
    PingEffect.objects.filter(pk=row.pk).update(handled_at=NOW - days_old * DAY)
    return row


def handled_before_done_retention(model: type) -> str:
    return "t.handled_at < %(done_before)s"


def test_a_host_model_registered_for_the_purge_is_purged_by_its_rule(host):
    effect(days_old=8)
    recent = effect(days_old=6)

    host.also_purge(PingEffect, handled_before_done_retention)

    assert PingEffect in purged_models()
    assert purge_model(PingEffect, now=NOW).deleted == 1
    assert list(PingEffect.objects.values_list("pk", flat=True)) == [recent.pk]


def test_the_hourly_purge_walks_a_registered_model(host):
    host.also_purge(PingEffect, handled_before_done_retention)

    assert "testapp.PingEffect" in {result.model for result in purge_all()}


def test_a_host_keeps_rows_of_its_scheduled_model_matching_its_rule(host):
    pings = {
        name: ScheduledPing.objects.create(
            ping=PingFactory(name=name), due_at=NOW - 60 * DAY, status="cancelled"
        )
        for name in ("keep", "drop")
    }
    ScheduledPing.objects.update(cancelled_at=NOW - 8 * DAY, updated_at=NOW - 8 * DAY)

    host.keep(ScheduledPing, keep_the_keep_ping)

    assert purge_model(ScheduledPing, now=NOW).deleted == 1
    assert list(ScheduledPing.objects.values_list("pk", flat=True)) == [pings["keep"].pk]


def keep_the_keep_ping(model: type) -> str:
    return f"t.ping_id IN (SELECT id FROM {Ping._meta.db_table} WHERE name = 'keep')"


def test_a_registered_route_is_served_under_the_api_include(host, admin_client):
    PingFactory(name="first")

    host.add_route("pings", "tests.testapp.api.PingViewSet", basename="ping")
    reload_api_urls()

    response = admin_client.get("/api/pings/")
    assert response.status_code == 200
    assert [ping["name"] for ping in response.json()["results"]] == ["first"]


def test_a_route_may_be_a_callable_resolved_when_the_urls_load(host, admin_client):
    from tests.testapp.api import PingViewSet

    host.add_route("pings", lambda: PingViewSet, basename="ping")
    reload_api_urls()

    assert admin_client.get("/api/pings/").status_code == 200


def test_registering_the_same_thing_again_changes_nothing(host):
    before = {field.name: dict(getattr(host, field.name)) for field in fields(host)}

    for label in ("scheduling_recurring", "scheduling_jobs", "trainings"):
        apps.get_app_config(label).ready()

    assert {field.name: dict(getattr(host, field.name)) for field in fields(host)} == before


def test_another_rule_under_a_taken_name_is_refused(host):
    with pytest.raises(ImproperlyConfigured, match=r"scheduling_jobs\.Job has a purge rule"):
        host.also_purge(Job, handled_before_done_retention)
    with pytest.raises(ImproperlyConfigured, match="jobs has a route"):
        host.add_route("jobs", "tests.testapp.api.PingViewSet", basename="job")


def test_a_purge_rule_goes_to_a_model_the_purge_would_not_walk_otherwise(host):
    with pytest.raises(ImproperlyConfigured, match="use keep"):
        host.also_purge(ScheduledOccurrence, latest_fire)
    with pytest.raises(ImproperlyConfigured, match="not a scheduled model"):
        host.keep(PingEffect, handled_before_done_retention)
